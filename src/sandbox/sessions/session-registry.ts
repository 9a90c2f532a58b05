/**
 * The sandbox server's sessions: creation (with lifetime hints clamped to the ceilings),
 * look-up, destruction, and the reaper that ends sessions past their idle timeout or
 * maximum lifetime.
 */
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import { SandpoolError } from "../../contract/error-codes.js";
import type { CreateSessionRequest } from "../../contract/schemas.js";
import { clampHint, type SandboxConfig } from "../config.js";
import { InterpreterZygote } from "../tools/interpreter-zygote.js";
import { resolvePythonExecutable } from "../tools/resolve-python.js";
import { StrayReaper } from "../tools/stray-reaper.js";
import { CodeLauncher } from "../user-code/code-user.js";
import { preloadSource } from "./preload-source.js";
import { ScrubFailedError, scrubSandbox } from "./scrub-sandbox.js";
import { type Scheduling, serverScheduling } from "./server-scheduling.js";
import { Session } from "./session.js";
import { repairDirectories } from "./workspace-repair.js";

export class SessionRegistry {
  private readonly sessions = new Map<string, Session>();
  /** Creations in flight count against the cap too, so a burst cannot overshoot it. */
  private creating = 0;
  private reaper: NodeJS.Timeout | undefined;
  /** The configured Python command until its real executable is known (resolve-python). */
  private python: string;
  /** Ends what calls leave behind, when configured (reapStrayProcesses). */
  private readonly strays: StrayReaper | undefined;
  /** Ends of sessions under way (their processes killed, their files deleted): a recycle waits for them. */
  private readonly ending = new Set<Promise<void>>();
  /** Tools running now, in every session: what they start is theirs, never a stray. */
  private toolsRunning = 0;
  /** Starts user programs under the code's identity and bounds (codeUser), if configured. */
  readonly launcher: CodeLauncher;
  /** Forks sessions' interpreters with the preload modules imported (forkInterpreters), if configured. */
  private readonly zygote: InterpreterZygote | undefined;
  /** True while a scrub runs: then the zygote's children are strays like any other process. */
  private scrubbing = false;
  /** The server's nice value, policy and CPUs at start: a scrub fails if user code changed them. */
  private readonly scheduling: Scheduling | undefined;

  constructor(
    private readonly config: SandboxConfig,
    private readonly log: Logger,
  ) {
    this.python = config.python;
    this.launcher = new CodeLauncher(
      config.codeUser && { user: config.codeUser, maxProcesses: config.codeMaxProcesses },
    );
    this.scheduling = process.platform === "linux" ? tryOrUndefined(() => serverScheduling()) : undefined;
    if (config.reapStrayProcesses) {
      this.strays = new StrayReaper(
        {
          protectedPids: () => this.protectedPids(),
          // An interpreter being forked is the zygote's child before its session knows its pid:
          // while a fork is unanswered, the zygote's children are spared; otherwise only forks'.
          protectedParents: () =>
            this.zygote?.pid === undefined || this.scrubbing || !this.zygote.forking().unanswered
              ? []
              : [this.zygote.pid],
        },
        log,
      );
      this.strays.assertSafe();
    }
    // A bare command may be a version manager's slow shim: find the real binary once.
    const python = path.isAbsolute(config.python)
      ? Promise.resolve(config.python)
      : resolvePythonExecutable(config.python, this.launcher).then((executable) => {
          this.python = executable;
          return executable;
        });
    if (config.forkInterpreters && config.prewarmInterpreter && process.platform === "linux") {
      this.zygote = new InterpreterZygote({
        python: () => python,
        launcher: this.launcher,
        preloadModules: config.preloadModules,
        // Outside every workspace; emptied with the sessions' root by a scrub, recreated by each fork.
        mplConfigDir: path.join(config.root, ".matplotlib"),
        readyTimeoutMs: config.preloadTimeoutMs,
        nice: this.launcher.nice,
        log,
      });
      this.zygote.start();
    }
  }

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Runs one tool call's work. With the stray reaper, what runs while no tool runs is ended
   * before the tool starts (what an interpreter's threads started since the last call: a
   * fork bomb among them would leave the tool no process to start) and once it returns.
   */
  async runTool<T>(work: () => Promise<T>): Promise<T> {
    this.reapStrays();
    this.toolsRunning++;
    try {
      return await work();
    } finally {
      this.toolsRunning--;
      this.reapStrays();
    }
  }

  private reapStrays(): void {
    if (!this.strays || this.toolsRunning > 0) return;
    try {
      this.strays.reap();
    } catch (error) {
      this.log.error({ err: error }, "could not end the processes calls left behind");
    }
  }

  /** The sessions' persistent interpreters: the processes that outlive a call on purpose. */
  *interpreterPids(): Iterable<number> {
    for (const session of this.sessions.values()) {
      const pid = session.interpreter.pid;
      if (pid !== undefined) yield pid;
    }
  }

  /** What the stray reaper and the scrub spare: the interpreters and the zygote (it never runs user code). */
  private *protectedPids(): Iterable<number> {
    yield* this.interpreterPids();
    if (this.zygote?.pid !== undefined) yield this.zygote.pid;
    if (this.zygote && !this.scrubbing) yield* this.zygote.forking().pids;
  }

  /**
   * `forkInBackground`: when the zygote is up, the session is answered as soon as it exists
   * and its interpreter is forked meanwhile (its first call waits for the fork). A recycle
   * asks for it: on a busy machine the fork waits for a CPU, and a session of the sandbox's
   * workspace waiting to be leased should not wait with it.
   */
  async create(request: CreateSessionRequest, { forkInBackground = false } = {}): Promise<Session> {
    if (this.sessions.size + this.creating >= this.config.maxSessions) {
      throw new SandpoolError("capacity.exhausted", "the sandbox server is at its session limit", {
        retryAfterSeconds: 1,
      });
    }
    const c = this.config;
    const times = {
      idleTimeoutSeconds: clampHint(
        request.idle_timeout_seconds,
        c.defaultIdleTimeoutSeconds,
        c.maxIdleTimeoutSeconds,
      ),
      maxLifetimeSeconds: clampHint(
        request.max_lifetime_seconds,
        c.defaultMaxLifetimeSeconds,
        c.maxLifetimeSeconds,
      ),
    };
    this.creating++;
    let session: Session;
    try {
      // A zygote starting (the server's start, or revived by a scrub) reads matplotlib's
      // config under the sessions' root, which user code can write: no session, so no user
      // code, exists until it has. Otherwise a session's bash could plant a matplotlibrc that
      // every later session's interpreter, forked from that zygote, would carry.
      await this.zygote?.started();
      // Code in an earlier session may have chmod-ed or deleted the sessions' root.
      await repairDirectories([c.root]);
      session = await Session.create(
        randomBytes(16).toString("hex"),
        c.root,
        times,
        this.python,
        this.launcher,
        this.zygote,
      );
      // Registered before its interpreter starts, so the stray reaper protects it once it runs.
      this.sessions.set(session.id, session);
    } finally {
      this.creating--;
    }
    if (!c.prewarmInterpreter) return session;
    if (forkInBackground && this.zygote?.pid !== undefined) {
      // A fork that fails here is tried again by the first call (the interpreter starts on demand).
      void session.interpreter.warm().catch(() => false);
      return session;
    }
    // Forked from the zygote, it has the modules already; started alone, it imports them now.
    const forked = await session.interpreter.warm().catch(() => false);
    if (!forked && c.preloadModules.length > 0) await this.preload(session);
    return session;
  }

  /**
   * Imports the configured modules in the session's interpreter before it is answered: a
   * pool creates its sandboxes' sessions at warm-up, so a lease finds them loaded. Never
   * fails the creation: a module that is missing or broken is simply not preloaded.
   */
  private async preload(session: Session): Promise<void> {
    const started = Date.now();
    try {
      // In the session's own directory, beside the workspace: removed with the session.
      const mplConfigDir = path.join(session.dir, "matplotlib");
      await mkdir(mplConfigDir, { mode: 0o700 });
      const source = preloadSource(this.config.preloadModules, mplConfigDir);
      const outcome = await session.interpreter.run(source, {
        timeoutMs: this.config.preloadTimeoutMs,
        maxOutputBytes: 4096,
        interruptGraceMs: this.config.interruptGraceMs,
      });
      this.log.debug(
        { session: session.id, ms: Date.now() - started, loaded: outcome.stdout.trim() },
        "modules preloaded",
      );
    } catch (error) {
      this.log.warn({ err: error, session: session.id }, "preloading modules failed");
    }
  }

  /**
   * Ends every session, scrubs the sandbox (scrub-sandbox.ts) and creates the next session
   * in it: how the gateway gives a sandbox to its workspace's next session without a
   * container start. Refused where the server cannot vouch for a clean sandbox (no PID
   * namespace of its own, or user code running as the server); a failed scrub is a 500,
   * after which the gateway destroys the sandbox.
   */
  async recycle(request: CreateSessionRequest): Promise<Session> {
    if (!this.strays || !this.config.codeUser) {
      throw new SandpoolError(
        "request.method_not_allowed",
        "this sandbox server cannot be recycled: it needs --reap-strays and --code-user",
      );
    }
    await Promise.all([...this.sessions.keys()].map((id) => this.destroy(id)));
    await Promise.all(this.ending);
    if (this.toolsRunning > 0 || this.creating > 0) {
      throw new SandpoolError("request.busy", "a tool call or a creation is still running", {
        retryAfterSeconds: 1,
      });
    }
    this.scrubbing = true;
    try {
      await scrubSandbox({
        strays: this.strays,
        launcher: this.launcher,
        dirs: [this.config.root, ...this.config.scrubDirs],
        scheduling: this.scheduling,
      });
    } catch (error) {
      if (error instanceof ScrubFailedError) {
        throw new SandpoolError("server.internal", `the sandbox could not be scrubbed: ${error.message}`);
      }
      throw error;
    } finally {
      this.scrubbing = false;
    }
    // Nothing of any session is left: a zygote that died may start again (interpreter-zygote.ts).
    this.zygote?.revive();
    const session = await this.create(request, { forkInBackground: true });
    // Off the gateway's request path: the next session's first call finds Python running (a
    // forked interpreter is running once forked).
    if (
      this.config.prewarmInterpreter &&
      this.config.preloadModules.length === 0 &&
      this.zygote?.pid === undefined
    ) {
      await session.interpreter
        .run("pass", { timeoutMs: this.config.preloadTimeoutMs, maxOutputBytes: 1024, interruptGraceMs: 0 })
        .catch(() => undefined);
    }
    return session;
  }

  /** The live session with this id; an unknown or ended one is a 404. */
  get(id: string): Session {
    const session = this.sessions.get(id);
    if (!session || session.destroyed) throw new SandpoolError("session.not_found", "no such session");
    return session;
  }

  /**
   * Ends a session; an unknown id is already in the desired state. The session is gone at
   * once (no call finds it, its processes are signalled); the promise settles once its
   * interpreter has exited and its files are deleted.
   */
  destroy(id: string): Promise<void> {
    const session = this.sessions.get(id);
    if (!session) return Promise.resolve();
    this.sessions.delete(id);
    const ended = session.destroy((error) =>
      this.log.warn({ err: error, session: id }, "some of the session's files could not be deleted"),
    );
    this.ending.add(ended);
    void ended.finally(() => this.ending.delete(ended));
    return ended;
  }

  startReaper(): void {
    this.reaper = setInterval(() => void this.reap(), this.config.reapIntervalMs);
    this.reaper.unref();
  }

  async reap(now = Date.now()): Promise<void> {
    for (const session of [...this.sessions.values()]) {
      const reason = session.expiry(now);
      if (!reason) continue;
      this.log.info({ session: session.id, reason }, "session reaped");
      await this.destroy(session.id).catch((error) => this.log.error({ err: error }, "reaping failed"));
    }
  }

  async close(): Promise<void> {
    clearInterval(this.reaper);
    await Promise.all([...this.sessions.keys()].map((id) => this.destroy(id)));
    await this.zygote?.close();
  }
}

function tryOrUndefined<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
