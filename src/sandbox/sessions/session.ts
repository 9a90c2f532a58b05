/**
 * One sandbox session: a directory of its own (the workspace, plus a private area the
 * server uses for uploads), a persistent Python interpreter, the text editor's undo history,
 * and the process groups its calls started. Calls run one at a time, in arrival order.
 */
import { mkdir, realpath, rm } from "node:fs/promises";
import path from "node:path";
import type { SessionHandle } from "../../contract/schemas.js";
import { signalGroup } from "../tools/process-group.js";
import { PythonInterpreter } from "../tools/python-interpreter.js";
import { TextEditor } from "../tools/text-editor.js";

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
    readonly dir: string,
    /** Real path of the workspace: every file operation is confined to it. */
    readonly workspace: string,
    readonly times: SessionTimes,
    python: string,
  ) {
    this.interpreter = new PythonInterpreter({ python, cwd: workspace, home: workspace });
    this.editor = new TextEditor(workspace);
  }

  static async create(id: string, root: string, times: SessionTimes, python: string): Promise<Session> {
    const dir = path.join(root, id);
    await mkdir(path.join(dir, "workspace"), { recursive: true, mode: 0o700 });
    await mkdir(path.join(dir, "uploads"), { mode: 0o700 });
    const workspace = await realpath(path.join(dir, "workspace"));
    return new Session(id, dir, workspace, times, python);
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

  /** Kills every process the session started and deletes its files. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const pgid of this.processGroups) signalGroup(pgid, "SIGKILL");
    await this.interpreter.close();
    await rm(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }
}
