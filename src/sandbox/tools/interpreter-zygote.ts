/**
 * Forks sessions' Python interpreters from one pre-imported process (zygote-source.ts), so a
 * session's interpreter costs a fork, not a Python start and the preload modules' imports:
 * what bounds how fast a recycled sandbox is ready, and most of its CPU (a pandas import is
 * ~0.6 s of CPU; a fork a few ms).
 *
 * The server reaches a forked interpreter's pipes by opening its /proc/<pid>/fd/1-4 (it runs
 * as the code's uid, the child's, and the child is dumpable): Node cannot receive descriptors
 * from another process, and the child is the zygote's, not the server's. The zygote reports
 * each child's exit. When the zygote is unavailable (not Linux, it failed to start, it died)
 * `fork` answers undefined and the caller starts the interpreter the usual way; a zygote that
 * dies takes its children's interpreters with it (their sessions see a restarted interpreter).
 *
 * It starts only while the sandbox holds nothing of any session: when the server starts, and
 * again (`revive`) right after a scrub, never while user code may have written where its
 * start reads (matplotlib's config directory, a user site directory under HOME); and no
 * session is created, so no user code runs, until its start ended (`started`). Its HOME is
 * `/` and Python runs it without user site directories (`-s`) all the same.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, constants as fsConstants, openSync } from "node:fs";
import { Socket } from "node:net";
import { constants as osConstants } from "node:os";
import type { Readable } from "node:stream";
import type { Logger } from "pino";
import type { CodeLauncher } from "../user-code/code-user.js";
import { readLines } from "./line-reader.js";
import { sandboxEnvironment, signalGroup } from "./process-group.js";
import { pythonDriverSource } from "./python-driver.js";
import { zygoteSource } from "./zygote-source.js";

/** How long the server retries opening a forked child's pipes it may not open yet. */
const ATTACH_RETRY_MS = 2_000;

/**
 * Opens a forked child's descriptors through /proc, in order. The child makes itself
 * dumpable (which opening needs) only after it closed its copy of the zygote's answer pipe,
 * just after it said it is ready: until then the first open is refused, so it is tried again
 * for a moment. Synchronous: each is a look-up in procfs and a pipe opened non-blocking (no
 * disk, nothing waits), where a trip through libuv's thread pool is a thread woken and a
 * CPU waited for, four times and again at every refused try.
 */
async function openFds(paths: readonly { path: string; flags: number }[]): Promise<number[]> {
  const deadline = Date.now() + ATTACH_RETRY_MS;
  const opened: number[] = [];
  try {
    while (opened.length < paths.length) {
      const { path, flags } = paths[opened.length]!;
      try {
        opened.push(openSync(path, flags));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if ((code !== "EACCES" && code !== "EPERM") || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    }
    return opened;
  } catch (error) {
    for (const fd of opened) closeSync(fd);
    throw error;
  }
}

export interface ZygoteOptions {
  /** The Python executable (resolved) or command. */
  python: () => Promise<string>;
  launcher: CodeLauncher;
  preloadModules: readonly string[];
  /** matplotlib's config and cache directory, outside any workspace; recreated by each child. */
  mplConfigDir: string;
  /** Longest the first start (Python and the preload imports) may take before forking is given up. */
  readyTimeoutMs: number;
  /** The nice value user code runs at. */
  nice: number;
  log: Logger;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A forked interpreter: its pid (and process group), its four pipes and its exit. */
export interface ForkedInterpreter {
  pid: number;
  stdout: Readable;
  stderr: Readable;
  control: Socket;
  replies: Readable;
  exited: Promise<ProcessExit>;
}

/** A fork that does not answer within this is given up (the caller starts the usual way). */
const FORK_TIMEOUT_MS = 10_000;
/** More deaths than this within RESTART_WINDOW_MS and it stays down: each start re-imports the preload modules. */
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 60_000;

interface PendingFork {
  /** The zygote's answer to the fork. */
  pid?: number;
  /** The child's own word that it is ready. */
  readyPid?: number;
  resolve: (pid: number) => void;
  reject: (error: Error) => void;
}

type State = "starting" | "ready" | "down" | "closed";

export class InterpreterZygote {
  private child: ChildProcess | undefined;
  private state: State = "down";
  private ready: Promise<boolean> = Promise.resolve(false);
  private nextId = 1;
  private readonly pending = new Map<number, PendingFork>();
  /** Forked children not yet reaped: pid -> what their exit resolves. */
  private readonly live = new Map<number, (exit: ProcessExit) => void>();
  /** Whether it ever became ready: a zygote that never did is not tried again. */
  private everReady = false;
  /** Down after dying within its restart budget: `revive` starts it again. */
  private revivable = false;
  /** When it died lately, for the restart budget. */
  private readonly deaths: number[] = [];

  constructor(private readonly options: ZygoteOptions) {}

  /** The zygote's pid while it runs: the stray reaper and the scrub spare it. */
  get pid(): number | undefined {
    return this.state === "starting" || this.state === "ready" ? this.child?.pid : undefined;
  }

  /**
   * Resolves once a start under way has ended, ready or not. The start reads what user code
   * could write (matplotlib's config directory under the sessions' root): the server creates
   * no session, so runs no user code, until it has (session-registry.ts).
   */
  async started(): Promise<void> {
    await this.ready;
  }

  start(): void {
    if (this.state !== "down") return;
    this.state = "starting";
    this.ready = this.launch().catch((error: unknown) => {
      this.options.log.info(
        { err: error },
        "the interpreter zygote did not start: interpreters start one by one",
      );
      this.stop();
      return false;
    });
  }

  /**
   * A fresh interpreter in `cwd` with exactly `env`, forked from the zygote; undefined when
   * the zygote is unavailable (the caller starts one itself). Waits for the zygote's first start.
   */
  async fork(cwd: string, env: NodeJS.ProcessEnv): Promise<ForkedInterpreter | undefined> {
    if (!(await this.ready) || this.state !== "ready" || !this.child?.stdio[3]) return undefined;
    const id = this.nextId++;
    let timer: NodeJS.Timeout | undefined;
    const forked = new Promise<number>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      timer = setTimeout(() => reject(new Error("the zygote did not fork in time")), FORK_TIMEOUT_MS);
    }).finally(() => {
      clearTimeout(timer);
      this.pending.delete(id);
    });
    const entry = this.pending.get(id);
    (this.child.stdio[3] as Socket).write(`${JSON.stringify({ id, cwd, env })}\n`);
    try {
      return await this.attach(await forked);
    } catch (error) {
      this.options.log.warn({ err: error }, "forking an interpreter failed: starting one the usual way");
      if (entry?.pid !== undefined) signalGroup(entry.pid, "SIGKILL");
      return undefined;
    }
  }

  /**
   * The zygote's children it forked for the server: those being forked (as the zygote
   * answered) and those attached until they exit, and whether a fork is not answered yet (its
   * child exists, its pid is unknown). The stray reaper spares these only.
   */
  forking(): { pids: number[]; unanswered: boolean } {
    const forks = [...this.pending.values()];
    return {
      pids: [...forks.flatMap((fork) => (fork.pid === undefined ? [] : [fork.pid])), ...this.live.keys()],
      unanswered: forks.some((fork) => fork.pid === undefined),
    };
  }

  async close(): Promise<void> {
    this.state = "closed";
    const child = this.child;
    this.child = undefined;
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once("exit", resolve));
      signalGroup(child.pid, "SIGKILL");
      await gone;
    }
  }

  private async launch(): Promise<boolean> {
    const { launcher, log } = this.options;
    const python = await this.options.python();
    if (this.state !== "starting") return false;
    const user = launcher.user;
    const config = {
      uid: user?.uid ?? null,
      gid: user?.gid ?? null,
      maxProcesses: launcher.maxProcesses ?? null,
      nice: this.options.nice,
      preload: this.options.preloadModules,
      mplConfigDir: this.options.mplConfigDir,
      driver: pythonDriverSource,
    };
    // Not through the launcher: the zygote keeps the server's identity (see zygote-source.ts).
    const child = spawn(python, ["-s", "-u", "-c", zygoteSource, JSON.stringify(config)], {
      cwd: "/",
      // Nothing user code can write: no user site directory, no config read from a workspace.
      env: sandboxEnvironment("/", launcher.environment()),
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"],
    });
    this.child = child;
    const say = (chunk: Buffer) =>
      log.info({ zygote: chunk.toString("utf8").slice(0, 2000) }, "interpreter zygote output");
    child.stdout?.on("data", say);
    child.stderr?.on("data", say);
    (child.stdio[3] as Socket).on("error", () => {}); // EPIPE once it died: seen through "exit"
    const started = Date.now();
    const ready = new Promise<boolean>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`not ready within ${this.options.readyTimeoutMs} ms`)),
        this.options.readyTimeoutMs,
      );
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`it exited (${signal ?? code}) before it was ready`));
      });
      child.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      readLines(child.stdio[4] as Readable, (line) => {
        const message = JSON.parse(line) as ZygoteMessage;
        if (message.ready === true && message.id === undefined) {
          clearTimeout(timer);
          log.debug({ ms: Date.now() - started, loaded: message.loaded }, "interpreter zygote ready");
          resolve(true);
          return;
        }
        this.hear(message);
      });
    });
    child.once("exit", () => this.died(child));
    await ready;
    if (this.state !== "starting") return false;
    this.state = "ready";
    this.everReady = true;
    return true;
  }

  private hear(message: ZygoteMessage): void {
    if (message.exit !== undefined) {
      const exit: ProcessExit = {
        code: message.code ?? null,
        signal: message.signal ? signalName(message.signal) : null,
      };
      const resolve = this.live.get(message.exit);
      this.live.delete(message.exit);
      resolve?.(exit);
      for (const fork of this.pending.values()) {
        if (fork.pid === message.exit)
          fork.reject(new Error("the forked interpreter exited before it was ready"));
      }
      return;
    }
    const fork = message.id === undefined ? undefined : this.pending.get(message.id);
    if (!fork) return;
    if (message.error !== undefined) {
      fork.reject(new Error(`fork failed: ${message.error}`));
    } else if (message.pid !== undefined) {
      // The pid is the zygote's word (its fork's answer); the child's "ready", which may come
      // first, only confirms it.
      if (message.ready === true) fork.readyPid = message.pid;
      else fork.pid = message.pid;
      if (fork.pid === undefined || fork.readyPid === undefined) return;
      if (fork.readyPid === fork.pid) fork.resolve(fork.pid);
      else
        fork.reject(
          new Error(`a forked interpreter said it is ${fork.readyPid}, the zygote forked ${fork.pid}`),
        );
    }
  }

  /** Its pipes, opened through /proc, and its exit, reported by the zygote. */
  private async attach(pid: number): Promise<ForkedInterpreter> {
    const exited = new Promise<ProcessExit>((resolve) => this.live.set(pid, resolve));
    const path = (fd: number) => `/proc/${pid}/fd/${fd}`;
    const readOnly = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK;
    let opened: number[];
    try {
      opened = await openFds([
        { path: path(1), flags: readOnly },
        { path: path(2), flags: readOnly },
        { path: path(3), flags: fsConstants.O_WRONLY | fsConstants.O_NONBLOCK },
        { path: path(4), flags: readOnly },
      ]);
    } catch (error) {
      this.live.delete(pid);
      throw error;
    }
    const [stdout, stderr, control, replies] = opened as [number, number, number, number];
    const forked = {
      pid,
      stdout: new Socket({ fd: stdout, readable: true, writable: false }),
      stderr: new Socket({ fd: stderr, readable: true, writable: false }),
      control: new Socket({ fd: control, readable: false, writable: true }),
      replies: new Socket({ fd: replies, readable: true, writable: false }),
      exited,
    };
    // Its ends are open: the child lets go of its spare writer and starts the driver.
    forked.control.write("\n");
    return forked;
  }

  /** The zygote is gone: its children's interpreters go too, and it starts again after a pause. */
  private died(child: ChildProcess): void {
    if (this.child !== child) return;
    this.child = undefined;
    for (const [pid, resolve] of this.live) {
      signalGroup(pid, "SIGKILL");
      resolve({ code: null, signal: "SIGKILL" });
    }
    this.live.clear();
    for (const fork of this.pending.values()) fork.reject(new Error("the zygote exited"));
    if (this.state === "closed") return;
    const wasReady = this.everReady;
    this.stop();
    if (!wasReady) return;
    const now = Date.now();
    this.deaths.push(now);
    while (this.deaths.length > 0 && now - this.deaths[0]! > RESTART_WINDOW_MS) this.deaths.shift();
    if (this.deaths.length > MAX_RESTARTS) {
      this.options.log.warn(
        "the interpreter zygote keeps exiting: interpreters start one by one from now on",
      );
      return;
    }
    this.options.log.warn("the interpreter zygote exited: it starts again after the next scrub");
    this.revivable = true;
  }

  /**
   * Starts it again if it died (within its restart budget). Call only while the sandbox holds
   * nothing of any session (right after a scrub): see the file's comment.
   */
  revive(): void {
    if (!this.revivable || this.state !== "down") return;
    this.revivable = false;
    this.start();
  }

  private stop(): void {
    if (this.state === "closed") return;
    this.state = "down";
    this.ready = Promise.resolve(false);
    const child = this.child;
    if (child?.pid !== undefined) signalGroup(child.pid, "SIGKILL");
  }
}

interface ZygoteMessage {
  id?: number;
  pid?: number;
  ready?: boolean;
  loaded?: string[];
  error?: string;
  exit?: number;
  code?: number | null;
  signal?: number | null;
}

function signalName(signal: number): NodeJS.Signals | null {
  const entry = Object.entries(osConstants.signals).find(([, value]) => value === signal);
  return (entry?.[0] as NodeJS.Signals | undefined) ?? null;
}
