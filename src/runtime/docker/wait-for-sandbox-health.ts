/**
 * Readiness: a sandbox is ready when its server answers `GET /health` with 200. Probes are
 * short and frequent (a container is usually ready in well under a second); the container's
 * state is checked now and then so one that exited fails at once, not at the deadline.
 * A server on a Unix socket is probed only once its socket exists: until then a probe would
 * be a failed connection (an error built, a stack captured) every interval, work of the event
 * loop the leases served meanwhile wait behind, for an answer a stat gives.
 */
import { statSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { type Dispatcher, request } from "undici";
import { sandboxOrigin } from "../../forward/sandbox-agent.js";

export interface HealthWait {
  endpoint: string;
  deadline: number;
  dispatcher: Dispatcher;
  probeTimeoutMs: number;
  intervalMs: number;
  /** Resolves to a reason when the container is gone or stopped, else undefined. */
  checkAlive: () => Promise<string | undefined>;
  aliveCheckEveryMs?: number;
  /** The Unix socket the server will listen on, when it is one: no probe before it exists. */
  socketPath?: string;
}

export class SandboxStartError extends Error {
  override readonly name = "SandboxStartError";
}

export async function waitForSandboxHealth(wait: HealthWait): Promise<void> {
  const aliveEvery = wait.aliveCheckEveryMs ?? 500;
  let lastAliveCheck = Date.now();
  let last = "no answer yet";
  for (;;) {
    const remaining = wait.deadline - Date.now();
    if (remaining <= 0) {
      throw new SandboxStartError(`the sandbox at ${wait.endpoint} was not ready by its deadline (${last})`);
    }
    const timeout = Math.max(1, Math.min(wait.probeTimeoutMs, remaining));
    const problem = await probe(wait, timeout);
    if (problem === undefined) return;
    last = problem;
    if (Date.now() - lastAliveCheck >= aliveEvery) {
      lastAliveCheck = Date.now();
      const dead = await wait.checkAlive();
      if (dead) throw new SandboxStartError(`the sandbox container stopped during start-up: ${dead}`);
    }
    const pause = Math.min(wait.intervalMs, wait.deadline - Date.now());
    if (pause > 0) await sleep(pause);
  }
}

/** Undefined when the server answers 200; what went wrong otherwise. */
async function probe(wait: HealthWait, timeout: number): Promise<string | undefined> {
  if (wait.socketPath !== undefined && !socketExists(wait.socketPath)) return "no socket yet";
  try {
    const res = await request(`${sandboxOrigin(wait.endpoint)}/health`, {
      method: "GET",
      dispatcher: wait.dispatcher,
      headersTimeout: timeout,
      bodyTimeout: timeout,
      signal: AbortSignal.timeout(timeout),
    });
    await res.body.dump();
    return res.statusCode === 200 ? undefined : `HTTP ${res.statusCode}`;
  } catch (error) {
    return error instanceof Error ? `${(error as NodeJS.ErrnoException).code ?? error.name}` : String(error);
  }
}

/**
 * Synchronous and without an error for a missing path: a start polls this every interval, and
 * fs/promises' stat took a trip through libuv's thread pool and built an ENOENT error (a stack
 * captured) each time: 0.4 s of a 15 s `bench:churn --profile` on a loaded 2-core host, the
 * gateway's largest self time after its sockets' writes. A stat of a local entry is microseconds.
 */
function socketExists(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isSocket() ?? false;
  } catch {
    return false;
  }
}
