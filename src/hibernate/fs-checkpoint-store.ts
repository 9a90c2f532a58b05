/**
 * The checkpoint store on a file system: a directory on this node by default, or a shared
 * one (a ReadWriteMany volume) so a session may resume on another node.
 *
 *   <root>/                       0700
 *     <workspace, hex>/           0700, one per workspace
 *       <session id>/             0700, a committed checkpoint
 *       .begun-<session>-<random> 0700, being written (or left by a crash)
 *
 * The workspace's name is hex-encoded, so no name can climb out of its directory or meet
 * another's; session ids are checked against a strict pattern. A lookup names both, so a
 * session of one workspace can never be handed another's checkpoint.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, readdir, rename, rm, stat, statfs } from "node:fs/promises";
import path from "node:path";
import {
  CHECKPOINT_REFUSAL_REASONS,
  type CheckpointRefusalReason,
  checkpointRefusal,
  type StoreLimits,
} from "./checkpoint-room.js";
import {
  CheckpointBoundError,
  type CheckpointBounds,
  type CheckpointStore,
  type CheckpointUsage,
  type StoredCheckpoint,
} from "./checkpoint-store.js";
import type { HibernateSettings } from "./hibernate-settings.js";

const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;
const BEGUN_PREFIX = ".begun-";
const PRIVATE = 0o700;

export class FsCheckpointStore implements CheckpointStore {
  /** Each workspace's begins, one after another: two at once must not both fit its bound. */
  private readonly beginning = new Map<string, Promise<unknown>>();

  /**
   * The store a deployment's `hibernate` settings describe, its refusals counted in
   * `refusals` (sandpool_hibernation_refusals_total), every reason from 0.
   */
  static fromSettings(
    settings: Pick<HibernateSettings, "checkpointDir" | "maxStoreBytes" | "minFreeBytes">,
    refusals?: { inc(labels: { reason: string }, value?: number): void },
  ): FsCheckpointStore {
    for (const reason of CHECKPOINT_REFUSAL_REASONS) refusals?.inc({ reason }, 0);
    return new FsCheckpointStore(settings.checkpointDir, {
      limits: {
        maxBytes: settings.maxStoreBytes,
        ...(settings.minFreeBytes > 0 ? { minFreeBytes: settings.minFreeBytes } : {}),
      },
      ...(refusals ? { onRefused: (reason: CheckpointRefusalReason) => refusals.inc({ reason }) } : {}),
    });
  }

  private readonly limits: StoreLimits;
  private readonly onRefused: ((reason: CheckpointRefusalReason) => void) | undefined;

  /**
   * `limits`: the store's own bounds (config `hibernate.maxStoreBytes`, `minFreeBytes`);
   * `onRefused` counts each refused begin by reason (sandpool_hibernation_refusals_total).
   */
  constructor(
    readonly location: string,
    options: { limits?: StoreLimits; onRefused?: (reason: CheckpointRefusalReason) => void } = {},
  ) {
    this.limits = options.limits ?? {};
    this.onRefused = options.onRefused;
  }

  begin(workspace: string, sessionId: string, bounds: CheckpointBounds): Promise<string> {
    const before = this.beginning.get(workspace) ?? Promise.resolve();
    const begun = before.catch(() => undefined).then(() => this.beginNow(workspace, sessionId, bounds));
    const settled = begun.catch(() => undefined);
    this.beginning.set(workspace, settled);
    void settled.then(() => {
      if (this.beginning.get(workspace) === settled) this.beginning.delete(workspace);
    });
    return begun;
  }

  private async beginNow(workspace: string, sessionId: string, bounds: CheckpointBounds): Promise<string> {
    checkSessionId(sessionId);
    const others = (await this.listWorkspace(workspace)).filter((c) => c.sessionId !== sessionId);
    // Checkpoints other sessions are writing now count too: each will be kept.
    const writing = (await readdirOrEmpty(this.workspaceDir(workspace))).filter(
      (entry) => entry.startsWith(BEGUN_PREFIX) && !entry.startsWith(`${BEGUN_PREFIX}${sessionId}-`),
    ).length;
    const workspaceDir = await this.ensureWorkspaceDir(workspace);
    const refused = checkpointRefusal(
      workspace,
      {
        workspaceCheckpoints: others.length + writing,
        workspaceBytes: others.reduce((sum, c) => sum + c.bytes, 0),
        // Only read when bounded: a walk of the whole store on every begin otherwise.
        storeBytes: this.limits.maxBytes === undefined ? 0 : await sizeOf(this.location),
        freeBytes:
          this.limits.minFreeBytes === undefined
            ? Number.POSITIVE_INFINITY
            : await freeBytesAt(this.location),
      },
      bounds,
      this.limits,
    );
    if (refused) {
      this.onRefused?.(refused.reason);
      throw new CheckpointBoundError(refused.message, refused.reason);
    }
    const dir = path.join(workspaceDir, `${BEGUN_PREFIX}${sessionId}-${randomBytes(6).toString("hex")}`);
    await mkdir(dir, { mode: PRIVATE });
    await chmod(dir, PRIVATE);
    return dir;
  }

  async commit(workspace: string, sessionId: string, dir: string): Promise<number> {
    checkSessionId(sessionId);
    const workspaceDir = this.workspaceDir(workspace);
    if (path.dirname(dir) !== workspaceDir || !path.basename(dir).startsWith(`${BEGUN_PREFIX}${sessionId}-`))
      throw new Error(`not a checkpoint directory begun for session ${sessionId}: ${dir}`);
    const target = path.join(workspaceDir, sessionId);
    // An older checkpoint of the session goes first; a crash between the two loses only the old one.
    await rm(target, { recursive: true, force: true });
    await rename(dir, target);
    return sizeOf(target);
  }

  async abandon(dir: string): Promise<void> {
    if (!path.basename(dir).startsWith(BEGUN_PREFIX) || !dir.startsWith(this.location + path.sep)) return;
    await rm(dir, { recursive: true, force: true });
  }

  async locate(workspace: string, sessionId: string): Promise<string | undefined> {
    checkSessionId(sessionId);
    const dir = path.join(this.workspaceDir(workspace), sessionId);
    try {
      return (await stat(dir)).isDirectory() ? dir : undefined;
    } catch {
      return undefined;
    }
  }

  async delete(workspace: string, sessionId: string): Promise<void> {
    checkSessionId(sessionId);
    await rm(path.join(this.workspaceDir(workspace), sessionId), { recursive: true, force: true });
  }

  async usage(workspace: string): Promise<CheckpointUsage> {
    const checkpoints = await this.listWorkspace(workspace);
    return { checkpoints: checkpoints.length, bytes: checkpoints.reduce((sum, c) => sum + c.bytes, 0) };
  }

  async list(): Promise<StoredCheckpoint[]> {
    const all: StoredCheckpoint[] = [];
    for (const name of await readdirOrEmpty(this.location)) {
      const workspace = workspaceOf(name);
      if (workspace !== undefined) all.push(...(await this.listWorkspace(workspace)));
    }
    return all;
  }

  async sweepUncommitted(olderThan: number): Promise<number> {
    let swept = 0;
    for (const name of await readdirOrEmpty(this.location)) {
      const workspaceDir = path.join(this.location, name);
      for (const entry of await readdirOrEmpty(workspaceDir)) {
        if (!entry.startsWith(BEGUN_PREFIX)) continue;
        const dir = path.join(workspaceDir, entry);
        const begun = await stat(dir).then(
          (s) => s.mtimeMs,
          () => undefined,
        );
        if (begun !== undefined && begun < olderThan) {
          await rm(dir, { recursive: true, force: true });
          swept++;
        }
      }
    }
    return swept;
  }

  private workspaceDir(workspace: string): string {
    if (workspace.length === 0) throw new Error("a checkpoint needs a workspace");
    return path.join(this.location, Buffer.from(workspace, "utf8").toString("hex"));
  }

  private async ensureWorkspaceDir(workspace: string): Promise<string> {
    await mkdir(this.location, { recursive: true, mode: PRIVATE });
    await chmod(this.location, PRIVATE);
    const dir = this.workspaceDir(workspace);
    await mkdir(dir, { recursive: true, mode: PRIVATE });
    await chmod(dir, PRIVATE);
    return dir;
  }

  private async listWorkspace(workspace: string): Promise<StoredCheckpoint[]> {
    const dir = this.workspaceDir(workspace);
    const found: StoredCheckpoint[] = [];
    for (const name of await readdirOrEmpty(dir)) {
      if (name.startsWith(BEGUN_PREFIX) || !SESSION_ID.test(name)) continue;
      const checkpointDir = path.join(dir, name);
      const info = await stat(checkpointDir).catch(() => undefined);
      if (!info?.isDirectory()) continue;
      found.push({
        workspace,
        sessionId: name,
        bytes: await sizeOf(checkpointDir),
        committedAt: info.mtimeMs,
      });
    }
    return found;
  }
}

function checkSessionId(sessionId: string): void {
  if (!SESSION_ID.test(sessionId)) throw new Error(`not a session id: ${JSON.stringify(sessionId)}`);
}

function workspaceOf(dirName: string): string | undefined {
  if (!/^(?:[0-9a-f]{2})+$/.test(dirName)) return undefined;
  return Buffer.from(dirName, "hex").toString("utf8");
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/** Bytes an unprivileged writer may still use on the file system holding `dir`. */
async function freeBytesAt(dir: string): Promise<number> {
  const fs = await statfs(dir);
  return fs.bavail * fs.bsize;
}

/** Bytes of the regular files under `dir`. */
export async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    // A checkpoint deleted while this walks (its session ended) holds nothing any more.
    const info = await stat(path.join(entry.parentPath, entry.name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    total += info?.size ?? 0;
  }
  return total;
}
