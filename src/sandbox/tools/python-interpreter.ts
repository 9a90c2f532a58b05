/**
 * A session's persistent Python interpreter: one long-lived `python3` process whose
 * namespace survives between calls. Calls are serialized by the caller (the session lock).
 * A call that overruns its timeout is interrupted (KeyboardInterrupt), then killed; a dead
 * interpreter is replaced by a fresh one and the call's stderr says the state was lost.
 * It is forked from the sandbox's zygote when there is one (interpreter-zygote.ts: a fork,
 * with the preload modules already imported), else started as a process of its own.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { constants as osConstants } from "node:os";
import type { Readable, Writable } from "node:stream";
import type { ExecutionOutcome } from "../../contract/schemas.js";
import type { CodeLauncher } from "../user-code/code-user.js";
import { cappedStreams, MarkedStreamReader, type OutputListener } from "./capped-output.js";
import type { ForkedInterpreter, InterpreterZygote, ProcessExit } from "./interpreter-zygote.js";
import { readLines } from "./line-reader.js";
import { sandboxEnvironment, signalGroup } from "./process-group.js";
import { pythonDriverSource } from "./python-driver.js";

export interface InterpreterOptions {
  python: string;
  cwd: string;
  home: string;
  /** Starts the interpreter as user code, under its identity and bounds. */
  launcher: CodeLauncher;
  /** Forks the interpreter, when the sandbox has one. */
  zygote?: InterpreterZygote | undefined;
}

/** How an interpreter process came to be, for its pipes and its end alike. */
interface InterpreterProcess {
  pid: number | undefined;
  /** Forked from the zygote (its preload modules already imported), not started alone. */
  forked: boolean;
  stdout: Readable;
  stderr: Readable;
  control: Writable;
  replies: Readable;
  exited: Promise<ProcessExit>;
  /** Settles once it exited and its output pipes closed. */
  closed: Promise<void>;
}

export interface RunLimits {
  timeoutMs: number;
  maxOutputBytes: number;
  /** How long an interrupted call may take to unwind before the interpreter is killed. */
  interruptGraceMs: number;
  /** Hears the output as it is kept (streamed Execute). */
  onOutput?: OutputListener;
}

interface Running {
  child: InterpreterProcess;
  control: Writable;
  stdout: MarkedStreamReader;
  stderr: MarkedStreamReader;
  replies: Map<number, (returnCode: number) => void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  closed: Promise<void>;
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
}

const EXIT_WAIT_MS = 2_000;

export class PythonInterpreter {
  private running: Running | undefined;
  private nextId = 1;
  /** Set when the interpreter died between calls; reported on the next call's stderr. */
  private lostBetweenCalls: string | undefined;
  /** Once closed, never restarted: a call racing the session's end must not revive it. */
  private closed = false;
  /** A start under way (a fork answers asynchronously): callers meanwhile share it. */
  private starting: Promise<Running> | undefined;

  constructor(private readonly options: InterpreterOptions) {}

  /**
   * Starts the process now so the first call does not pay for Python's start-up. True when
   * it was forked from the zygote: it has the preload modules already.
   */
  async warm(): Promise<boolean> {
    return (await this.ensureRunning()).child.forked;
  }

  get pid(): number | undefined {
    return this.running?.child.pid;
  }

  async run(code: string, limits: RunLimits): Promise<ExecutionOutcome> {
    const proc = await this.ensureRunning();
    const { out, err } = cappedStreams(limits.maxOutputBytes, limits.onOutput);
    const notice = this.lostBetweenCalls;
    this.lostBetweenCalls = undefined;
    if (notice) err.push(Buffer.from(`${notice}\n`));

    const id = this.nextId++;
    const marker = `\u0000sandpool-end-${randomUUID()}\u0000`;
    const streamsDone = Promise.all([proc.stdout.begin(out, marker), proc.stderr.begin(err, marker)]);
    const replied = new Promise<number>((resolve) => proc.replies.set(id, resolve));
    const finished = Promise.all([replied, streamsDone]).then(([returnCode]) => ({ returnCode }));
    const died = proc.exited.then((exit) => ({ exit }));
    proc.control.write(`${JSON.stringify({ id, code, marker })}\n`);

    let timedOut = false;
    let outcome = await raceWithTimeout(Promise.race([finished, died]), limits.timeoutMs);
    if (outcome === undefined) {
      timedOut = true;
      signalGroup(proc.child.pid, "SIGINT");
      outcome = await raceWithTimeout(Promise.race([finished, died]), limits.interruptGraceMs);
      if (outcome === undefined) {
        signalGroup(proc.child.pid, "SIGKILL");
        outcome = await died;
      }
    }
    proc.replies.delete(id);

    const timeoutNote = `Execution timed out after ${formatSeconds(limits.timeoutMs)}.`;
    if ("returnCode" in outcome) {
      if (timedOut) err.note(`\n${timeoutNote}\n`);
      return { stdout: out.text(), stderr: err.text(), return_code: timedOut ? 124 : outcome.returnCode };
    }

    // The interpreter is gone: collect what it wrote, then replace it.
    await proc.closed;
    proc.stdout.abandon();
    proc.stderr.abandon();
    this.running = undefined;
    this.lostBetweenCalls = undefined; // it died during this call, and this call says so
    const cause = timedOut ? timeoutNote : `The Python interpreter exited (${describeExit(outcome.exit)}).`;
    err.note(`\n${cause} It was restarted; variables and imports from earlier calls are gone.\n`);
    if (!this.closed) void this.ensureRunning().catch(() => undefined);
    return { stdout: out.text(), stderr: err.text(), return_code: timedOut ? 124 : exitStatus(outcome.exit) };
  }

  /** Kills the interpreter and everything it started. */
  async close(): Promise<void> {
    this.closed = true;
    const proc = this.running;
    this.running = undefined;
    if (!proc) return;
    signalGroup(proc.child.pid, "SIGKILL");
    await raceWithTimeout(proc.exited, EXIT_WAIT_MS);
  }

  private ensureRunning(): Promise<Running> {
    if (this.closed) return Promise.reject(new Error("the interpreter was closed with its session"));
    if (this.running && this.running.exit === undefined) return Promise.resolve(this.running);
    this.starting ??= this.startProcess().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async startProcess(): Promise<Running> {
    const { launcher, zygote } = this.options;
    const env = sandboxEnvironment(this.options.home, launcher.environment());
    const forked = await zygote?.fork(this.options.cwd, env);
    const child = forked ? forkedProcess(forked) : this.spawnProcess(env);
    if (this.closed) {
      signalGroup(child.pid, "SIGKILL");
      throw new Error("the interpreter was closed with its session");
    }
    const stdout = new MarkedStreamReader();
    const stderr = new MarkedStreamReader();
    child.stdout.on("data", (chunk: Buffer) => stdout.write(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.write(chunk));
    const replies = new Map<number, (returnCode: number) => void>();
    readLines(child.replies, (line) => {
      const reply = JSON.parse(line) as { id: number; return_code: number };
      replies.get(reply.id)?.(reply.return_code);
    });
    child.control.on("error", () => {}); // EPIPE when the interpreter dies: seen through its exit
    const running: Running = {
      child,
      control: child.control,
      stdout,
      stderr,
      replies,
      exit: undefined,
      exited: child.exited.then((exit) => {
        running.exit = exit;
        // Its children may still hold the output pipes open; they go with it.
        signalGroup(child.pid, "SIGKILL");
        if (this.running === running) {
          this.lostBetweenCalls = `The Python interpreter exited (${describeExit(exit)}) between calls. It was restarted; variables and imports from earlier calls are gone.`;
        }
        return exit;
      }),
      closed: child.closed,
    };
    this.running = running;
    return running;
  }

  private spawnProcess(env: NodeJS.ProcessEnv): InterpreterProcess {
    const { launcher } = this.options;
    // -s: no user site directory (HOME's .local, where user code writes), as for a forked
    // interpreter (the zygote runs with -s); nothing configures Python from a writable place.
    const { file, args } = launcher.command(this.options.python, ["-s", "-u", "-c", pythonDriverSource]);
    const child = spawn(file, args, {
      cwd: this.options.cwd,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe", "pipe", "pipe"],
    });
    launcher.started(child.pid);
    return {
      pid: child.pid,
      forked: false,
      stdout: child.stdout as Readable,
      stderr: child.stderr as Readable,
      control: child.stdio[3] as Writable,
      replies: child.stdio[4] as Readable,
      exited: new Promise((resolve) => {
        child.once("exit", (code, signal) => resolve({ code, signal }));
        child.once("error", () => resolve({ code: 127, signal: null }));
      }),
      closed: new Promise((resolve) => child.once("close", () => resolve())),
    };
  }
}

/** A forked interpreter as the interpreter's process: closed once it exited and its output pipes ended. */
function forkedProcess(forked: ForkedInterpreter): InterpreterProcess {
  const ended = (stream: Readable) => new Promise<void>((resolve) => stream.once("close", () => resolve()));
  const outputClosed = Promise.all([ended(forked.stdout), ended(forked.stderr), ended(forked.replies)]);
  const closed = Promise.all([forked.exited, outputClosed]).then(() => {
    forked.control.destroy();
  });
  // Once it exited, nothing more may be written to it (and the descriptor must go).
  void forked.exited.then(() => forked.control.destroy());
  return {
    pid: forked.pid,
    forked: true,
    stdout: forked.stdout,
    stderr: forked.stderr,
    control: forked.control,
    replies: forked.replies,
    exited: forked.exited,
    closed,
  };
}

function raceWithTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describeExit(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit status ${exit.code}`;
}

function exitStatus(exit: { code: number | null; signal: NodeJS.Signals | null }): number {
  if (exit.signal) return 128 + (osConstants.signals[exit.signal] ?? 0);
  return exit.code ?? 1;
}

function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`;
}
