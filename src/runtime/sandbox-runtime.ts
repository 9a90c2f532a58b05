/**
 * Container drivers behind one interface: the docker runtime (production) and the process
 * runtime (dev: sandbox servers as child processes, not isolated). The pool asks a runtime
 * to start a sandbox, which answers once the sandbox server inside is listening, and to
 * destroy one; `list` is what reconciliation compares with the store.
 */
import type { Isolation } from "../policy-schema/isolation-levels.js";

/** One pool of identical sandboxes: an image in a resource class. */
export interface PoolSpec {
  name: string;
  image: string;
  resourceClass: string;
  minIdle: number;
  maxTotal: number;
  warmupConcurrency: number;
  coldStartTimeoutMs: number;
  /**
   * How long a lease waits its turn at the start gate while the engine starts others (a
   * burst); default START_QUEUE_TIMEOUT_MS (src/pool/sandbox-pool.ts).
   */
  startQueueTimeoutMs?: number;
  /** Sandboxes with network egress: leased only to workspaces whose policy allows it. */
  egress?: boolean;
  /** False: keep minIdle warm, whatever the lease rate (src/pool/pool-demand.ts). Default true. */
  demand?: boolean;
  /** Its sandboxes' kernel boundary; default `container`. */
  isolation?: Isolation;
}

export interface StartRequest {
  sandboxId: string;
  pool: PoolSpec;
  /** Epoch milliseconds by which the sandbox must answer, or the start fails. */
  deadline: number;
}

export interface StartedSandbox {
  runtimeId: string;
  /** Base URL of the sandbox server, as the gateway reaches it. */
  endpoint: string;
}

export interface RuntimeSandbox {
  runtimeId: string;
  sandboxId: string;
  pool: string;
  /** Epoch milliseconds; reconciliation leaves very young sandboxes alone. */
  createdAt?: number;
  /** False for one that exited (crashed, killed, out of memory): its sandbox is gone. */
  running?: boolean;
  /** Its pool allows egress: it has a proxy socket to serve. */
  egress?: boolean;
}

/**
 * list() could not ask every engine: `partial` holds what the reachable ones answered.
 * Sandboxes on an engine that is away count as gone: their sessions are ended (drained),
 * and once the engine returns, what is left on it is destroyed as orphans.
 */
export class PartialListError extends Error {
  constructor(
    message: string,
    readonly partial: RuntimeSandbox[],
  ) {
    super(message);
  }
}

/** What a sandbox used over its life, measured outside it (its cgroup), never reported by it. */
export interface SandboxUsage {
  /** CPU time of every process in the sandbox, user and system, since it started. */
  cpuSeconds: number;
  /** The most memory it held at once, where the engine reports it (cgroup v1). */
  memoryPeakBytes?: number;
  /** The memory it held when measured. */
  memoryBytes?: number;
}

export interface SandboxRuntime {
  readonly kind: "process" | "docker";
  /** False for the process runtime: user code runs with the gateway's own privileges. */
  readonly isolated: boolean;
  /**
   * Whether its sandboxes can be scrubbed and given to their workspace's next session
   * (src/pool/sandbox-reuse.ts): only where everything user code can write is emptied by the
   * scrub (a read-only root) and the server owns its PID namespace. Absent: never.
   */
  readonly recyclable?: boolean;
  start(request: StartRequest): Promise<StartedSandbox>;
  /** Stops and removes the sandbox; an unknown or already removed one is not an error. */
  destroy(runtimeId: string): Promise<void>;
  /** What the runtime holds now; no side effect (reconciliation `tidy`s after it). */
  list(): Promise<RuntimeSandbox[]>;
  /**
   * After a complete listing: what the host keeps beside its sandboxes brought in line with
   * them (the docker runtime: socket directories, egress proxies). Absent: nothing to do.
   */
  tidy?(listed: readonly RuntimeSandbox[]): Promise<void>;
  /**
   * What the sandbox used so far, from outside it; undefined when it is gone or stopped.
   * Absent where nothing outside the sandbox measures it (the process runtime).
   */
  usage?(runtimeId: string): Promise<SandboxUsage | undefined>;
  /**
   * Starts the sandbox's memory peak anew from what it holds now (a reused sandbox's next
   * session is given its own peak). False where it cannot be (cgroup v2, a cgroup not visible
   * from here): the peak then still holds earlier sessions'. Absent: never.
   */
  resetMemoryPeak?(runtimeId: string): Promise<boolean>;
  close(): Promise<void>;
}
