/**
 * PGlite in a child process of its own (pglite-host.mjs, which says why), behind the part of
 * PGlite's API the Kysely dialect uses. Requests and answers cross the IPC channel with
 * advanced serialization (structured cloning): parameters and rows keep their types. A
 * database error comes back as an Error with Postgres' fields (`code`, `detail`, ...) on it,
 * as PGlite would throw it.
 */
import { type ChildProcess, fork } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PgliteResult, PgliteSession } from "./pglite-dialect.js";

export interface PgliteProcessOptions {
  /** Where the data lives across restarts; in memory when undefined. */
  dataDir?: string;
  /** A dump (`dumpDataDir`) to start from instead of running initdb. */
  loadDataDir?: Uint8Array;
}

interface Pending {
  resolve(result: unknown): void;
  reject(error: Error): void;
}

type HostRequest =
  | { op: "query"; sql: string; params: unknown[] }
  | { op: "exec"; sql: string }
  | { op: "close" };
type HostMessage =
  | { ready: true; dump?: Uint8Array }
  | { ready: false; error: ErrorFields }
  | { id: number; result?: unknown; error?: ErrorFields };
type ErrorFields = { message: string; name?: string } & Record<string, unknown>;

const HOST_PATH = fileURLToPath(new URL("./pglite-host.mjs", import.meta.url));
const CLOSE_TIMEOUT_MS = 30_000;
/**
 * The host's V8, sized for a small database (measured with `ps -o rss`: ~340 MB at rest with
 * the defaults, ~110 MB with these and the host's Postgres settings). Liftoff only: PGlite's
 * WebAssembly stays on the baseline compiler, whose code is a fraction of what the optimising
 * tier builds (and queries run no slower here). Single-threaded: no compiler or GC threads,
 * each of which kept a malloc arena of its own. A 1 MB young generation: the host's garbage is
 * small messages, and the default semi-spaces held ~25 MB of RSS.
 */
const HOST_EXEC_ARGV = ["--liftoff-only", "--single-threaded", "--max-semi-space-size=1"];

export class PgliteProcess implements PgliteSession {
  readonly waitReady = Promise.resolve();
  readonly #child: ChildProcess;
  readonly #exited: Promise<void>;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** Why the host is gone, once it is: every later request fails with it. */
  #gone: Error | undefined;

  private constructor(child: ChildProcess, exited: Promise<void>) {
    this.#child = child;
    this.#exited = exited;
    child.on("message", (message: HostMessage) => {
      if ("id" in message) this.#settle(message.id, message.result, message.error && toError(message.error));
    });
    child.on("error", (error) => this.#fail(error));
    void exited.then(() => this.#fail(new Error("the database process exited")));
  }

  /**
   * Starts the host and waits until its database is open. A database that does not exist
   * yet (a new data dir, or in memory without a dump) is first created by a host of its own
   * that then exits (pglite-host.mjs says why).
   */
  static async open(options: PgliteProcessOptions = {}): Promise<PgliteProcess> {
    let { loadDataDir } = options;
    const { dataDir } = options;
    if (!loadDataDir && !(dataDir && existsSync(path.join(dataDir, "PG_VERSION")))) {
      const { child, exited } = startHost();
      const created = await handshake(child, exited, { op: "initdb", dataDir });
      await exited;
      if (!dataDir) loadDataDir = created.dump;
    }
    const { child, exited } = startHost();
    await handshake(child, exited, { op: "open", dataDir, loadDataDir });
    // Idle, the host must not keep the gateway's process alive: closing it is explicit.
    child.unref();
    child.channel?.unref();
    return new PgliteProcess(child, exited);
  }

  /** The host's process id (benches and tests read its memory). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  get closed(): boolean {
    return this.#closed;
  }

  query(sql: string, params: unknown[] = []): Promise<PgliteResult> {
    return this.#call({ op: "query", sql, params }) as Promise<PgliteResult>;
  }

  exec(sql: string): Promise<PgliteResult[]> {
    return this.#call({ op: "exec", sql }) as Promise<PgliteResult[]>;
  }

  /** Closes the database (its data is on disk when this resolves) and ends the host. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    // A host that does not finish closing in time is killed: shutdown must not hang on it.
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), CLOSE_TIMEOUT_MS);
    try {
      if (!this.#gone) await this.#call({ op: "close" });
    } finally {
      this.#closed = true;
      await this.#exited;
      clearTimeout(timer);
    }
  }

  #call(request: HostRequest): Promise<unknown> {
    if (this.#closed) return Promise.reject(new Error("the database is closed"));
    if (this.#gone) return Promise.reject(this.#gone);
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      // While an answer is awaited the channel keeps the gateway alive; idle, it does not.
      if (this.#pending.size === 1) this.#child.channel?.ref();
      this.#child.send({ id, ...request }, (error) => {
        if (error) this.#settle(id, undefined, error);
      });
    }).finally(() => {
      if (this.#pending.size === 0) this.#child.channel?.unref();
    });
  }

  #settle(id: number, result: unknown, error?: Error): void {
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    if (error) pending?.reject(error);
    else pending?.resolve(result);
  }

  #fail(error: Error): void {
    this.#gone ??= error;
    for (const pending of this.#pending.values()) pending.reject(this.#gone);
    this.#pending.clear();
  }
}

function startHost(): { child: ChildProcess; exited: Promise<void> } {
  const child = fork(HOST_PATH, [], {
    serialization: "advanced",
    // The gateway's own flags (a profiler, a test runner's loader) are not the host's.
    execArgv: HOST_EXEC_ARGV,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { child, exited };
}

/** Sends the host its first request and waits for its { ready } answer. */
function handshake(
  child: ChildProcess,
  exited: Promise<void>,
  request: { op: "open" | "initdb"; dataDir?: string; loadDataDir?: Uint8Array },
): Promise<{ dump?: Uint8Array }> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: HostMessage) => {
      if (!("ready" in message)) return;
      child.off("message", onMessage);
      if (message.ready) resolve({ dump: message.dump });
      else reject(toError(message.error));
    };
    child.on("message", onMessage);
    child.once("error", reject);
    void exited.then(() => reject(new Error("the database process exited before the database opened")));
    child.send(request);
  });
}

function toError(fields: ErrorFields): Error {
  const { message, name, ...rest } = fields;
  const error = Object.assign(new Error(message), rest);
  if (name) error.name = name;
  return error;
}
