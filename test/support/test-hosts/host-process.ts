/**
 * A process running inside a test host's network namespace (`nsenter --net=<ns> -- cmd`:
 * nsenter joins the namespace and execs the command, so `pid` is the command itself). Its
 * output is kept (the last 256 KiB of each stream) for waitForOutput and for error messages.
 *
 * Every live HostProcess is in its test host's set: close() of the test hosts stops them; if
 * the test process exits anyway (a crash, a failed hook) a process 'exit' hook SIGKILLs
 * whatever is left, so a run never leaves a server behind. A killed test runner (kill -9)
 * cannot run that hook: the next run's start-up sweep kills what is still in its namespaces.
 */
import { type ChildProcess, spawn } from "node:child_process";

const KEEP_BYTES = 256 * 1024;

export interface SpawnOptions {
  /** Environment of the process (default: the test's own). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Also copy its output to this test's stderr, prefixed with the label (for debugging). */
  echo?: boolean;
  /** A short name for messages (default: the command's base name). */
  label?: string;
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const live = new Set<HostProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const child of live) child.killNow();
  });
}

export class HostProcess {
  readonly pid: number;
  /** Settles once the process has exited (never rejects). */
  readonly exited: Promise<ProcessExit>;
  private exit: ProcessExit | undefined;
  private stdoutText = "";
  private stderrText = "";
  private readonly child: ChildProcess;
  private readonly label: string;

  constructor(
    readonly netnsPath: string,
    readonly command: string,
    readonly args: readonly string[],
    readonly options: SpawnOptions = {},
    /** The owner's set of its processes (a test host's): this one is in it while it runs. */
    private readonly owner?: Set<HostProcess>,
  ) {
    installExitHook();
    this.label = options.label ?? command.split("/").pop() ?? command;
    this.child = spawn("nsenter", [`--net=${netnsPath}`, "--", command, ...args], {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    // undefined when spawn failed (reported by the 'error' event, below, as an exit).
    this.pid = this.child.pid ?? -1;
    live.add(this);
    owner?.add(this);
    this.child.stdout?.on("data", (chunk: Buffer) => {
      this.stdoutText = keepTail(this.stdoutText + chunk.toString("utf8"));
      if (options.echo) process.stderr.write(prefixLines(this.label, chunk));
    });
    this.child.stderr?.on("data", (chunk: Buffer) => {
      this.stderrText = keepTail(this.stderrText + chunk.toString("utf8"));
      if (options.echo) process.stderr.write(prefixLines(this.label, chunk));
    });
    this.exited = new Promise((resolve) => {
      this.child.on("error", (error) => {
        this.stderrText += `\n${error.message}`;
        this.exit ??= { code: null, signal: null };
        this.forget();
        resolve(this.exit);
      });
      this.child.on("exit", (code, signal) => {
        this.exit = { code, signal };
        this.forget();
        resolve(this.exit);
      });
    });
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  get stdout(): string {
    return this.stdoutText;
  }

  get stderr(): string {
    return this.stderrText;
  }

  /** Both streams, for an error message: the last `lines` lines. */
  tail(lines = 20): string {
    return `${this.stdoutText}\n${this.stderrText}`.trim().split("\n").slice(-lines).join("\n");
  }

  /** Resolves with the first match of `pattern` in stdout or stderr; rejects on exit or timeout. */
  async waitForOutput(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.stdoutText.match(pattern) ?? this.stderrText.match(pattern);
      if (match) return match;
      if (!this.running) {
        throw new Error(
          `${this.label} exited (${describeExit(this.exit!)}) before printing ${pattern}:\n${this.tail()}`,
        );
      }
      if (Date.now() > deadline) {
        throw new Error(
          `${this.label} did not print ${pattern} within ${timeoutMs / 1000} s:\n${this.tail()}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /**
   * Sends `signal` (SIGTERM by default) and waits up to `graceMs` for the exit, then SIGKILL
   * (waiting up to 5 s more). SIGKILL straight away simulates a crash (`kill("SIGKILL")`).
   */
  async kill(signal: NodeJS.Signals = "SIGTERM", graceMs = 5_000): Promise<ProcessExit> {
    if (!this.running) return this.exit!;
    this.child.kill(signal);
    if (signal !== "SIGKILL" && !(await settlesWithin(this.exited, graceMs))) this.child.kill("SIGKILL");
    if (!(await settlesWithin(this.exited, 5_000))) {
      throw new Error(`${this.label} (pid ${this.pid}) did not exit after SIGKILL`);
    }
    return this.exit!;
  }

  /** Stops this process (as kill) and starts the same command again in the same namespace. */
  async restart(signal: NodeJS.Signals = "SIGTERM"): Promise<HostProcess> {
    await this.kill(signal);
    return new HostProcess(this.netnsPath, this.command, this.args, this.options, this.owner);
  }

  private forget(): void {
    live.delete(this);
    this.owner?.delete(this);
  }

  /** Synchronous last resort (process 'exit' hook). */
  killNow(): void {
    if (this.running) this.child.kill("SIGKILL");
  }
}

/** Stops every process of a set (a test host's, at close()): SIGTERM, then SIGKILL after `graceMs`. */
export async function stopHostProcesses(processes: Set<HostProcess>, graceMs = 5_000): Promise<void> {
  await Promise.all([...processes].map((child) => child.kill("SIGTERM", graceMs).catch(() => undefined)));
}

export function describeExit(exit: ProcessExit): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

function keepTail(text: string): string {
  return text.length > KEEP_BYTES ? text.slice(-KEEP_BYTES) : text;
}

function prefixLines(label: string, chunk: Buffer): string {
  return chunk
    .toString("utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => `[${label}] ${line}\n`)
    .join("");
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
