/**
 * One sandbox session: a directory of its own (the workspace, plus a private area the
 * server uses for uploads), a persistent Python interpreter, the text editor's undo history,
 * and the process groups its calls started. Calls run one at a time, in arrival order.
 */
import { mkdirSync, realpathSync } from "node:fs";
import path from "node:path";
import type { SessionHandle } from "../../contract/schemas.js";
import type { InterpreterZygote } from "../tools/interpreter-zygote.js";
import { signalGroup } from "../tools/process-group.js";
import { PythonInterpreter } from "../tools/python-interpreter.js";
import { TextEditor } from "../tools/text-editor.js";
import type { CodeLauncher } from "../user-code/code-user.js";
import { removeTree } from "./remove-tree.js";
import { repairDirectories } from "./workspace-repair.js";

export interface SessionTimes {
  idleTimeoutSeconds: number;
  maxLifetimeSeconds: number;
}

export class Session {
  readonly createdAt = Date.now();
  lastActivityAt = this.createdAt;
  /** Calls currently queued or running: a busy session is not idle, whatever the clock says. */
  activeCalls = 0;
  destroyed = false;
  readonly interpreter: PythonInterpreter;
  readonly editor: TextEditor;
  private readonly processGroups = new Set<number>();
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly id: string,
    /** The sessions' root (a real path), this session's directory in it, and the workspace in that. */
    private readonly root: string,
    readonly dir: string,
    /** Real path of the workspace: every file operation is confined to it. */
    readonly workspace: string,
    readonly times: SessionTimes,
    python: string,
    readonly launcher: CodeLauncher,
    zygote: InterpreterZygote | undefined,
  ) {
    this.interpreter = new PythonInterpreter({ python, cwd: workspace, home: workspace, launcher, zygote });
    this.editor = new TextEditor(workspace);
  }

  /** `root` must be a real path (no symlink along it): the session's paths are built on it. */
  static async create(
    id: string,
    root: string,
    times: SessionTimes,
    python: string,
    launcher: CodeLauncher,
    zygote?: InterpreterZygote,
  ): Promise<Session> {
    const dir = path.join(root, id);
    // Synchronous: three system calls on the sessions' root (a tmpfs in a sandbox), where each
    // asynchronous one was a trip through libuv's thread pool on the way to every session.
    mkdirSync(path.join(dir, "workspace"), { recursive: true, mode: 0o700 });
    mkdirSync(path.join(dir, "uploads"), { mode: 0o700 });
    const workspace = realpathSync(path.join(dir, "workspace"));
    return new Session(id, root, dir, workspace, times, python, launcher, zygote);
  }

  /**
   * Puts the session's directories back if code in the sandbox deleted, chmod-ed or replaced
   * them (workspace-repair.ts), before each file operation and tool call: a 4xx if it cannot.
   */
  async ensureUsable(): Promise<void> {
    await repairDirectories([this.root, this.dir, this.workspace, this.uploadDir]);
  }

  /** Where partial uploads are written before they are moved into the workspace. */
  get uploadDir(): string {
    return path.join(this.dir, "uploads");
  }

  touch(): void {
    this.lastActivityAt = Date.now();
  }

  trackProcessGroup(pgid: number): void {
    this.processGroups.add(pgid);
  }

  /** Runs `work` after every call queued before it has finished. */
  serialize<T>(work: () => Promise<T>): Promise<T> {
    this.activeCalls++;
    this.touch();
    const result = this.queue.then(work).finally(() => {
      this.activeCalls--;
      this.touch();
    });
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Why the reaper should end this session now, or undefined while it may live. */
  expiry(now: number): "idle" | "lifetime" | undefined {
    if (now - this.createdAt >= this.times.maxLifetimeSeconds * 1000) return "lifetime";
    if (this.activeCalls === 0 && now - this.lastActivityAt >= this.times.idleTimeoutSeconds * 1000)
      return "idle";
    return undefined;
  }

  handle(): SessionHandle {
    return {
      session_id: this.id,
      idle_timeout_seconds: this.times.idleTimeoutSeconds,
      max_lifetime_seconds: this.times.maxLifetimeSeconds,
      created_at: this.createdAt / 1000,
      last_activity_at: this.lastActivityAt / 1000,
    };
  }

  /**
   * Kills every process the session started and deletes its files, even those user code
   * made unreadable (remove-tree.ts). Never fails: what cannot be deleted is only logged by
   * the caller's `onLeftover`, and goes with the container.
   */
  async destroy(onLeftover: (error: unknown) => void = () => {}): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const pgid of this.processGroups) signalGroup(pgid, "SIGKILL");
    await this.interpreter.close();
    await removeTree(this.dir).catch(onLeftover);
  }
}
