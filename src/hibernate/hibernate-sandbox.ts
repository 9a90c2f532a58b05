/**
 * A session's sandbox to a checkpoint in the store, and back (docs/hibernate.md). What the
 * session record keeps of a hibernated sandbox is `HibernatedSandbox`; the lease, slot and
 * container are the caller's to free once this returns.
 *
 * Faults: a refusal before the save (no checkpoint for the pool, the workspace's bound) leaves
 * the sandbox running and nothing in the store; a failed save leaves no checkpoint (its
 * directory is abandoned). A restore never deletes the checkpoint: the caller does, once the
 * session is running again, so a failed or interrupted restore can be retried.
 */
import type { CheckpointKind, SandboxCheckpoints } from "../runtime/sandbox-checkpoints.js";
import type { PoolSpec, StartedSandbox } from "../runtime/sandbox-runtime.js";
import type { CheckpointBounds, CheckpointStore } from "./checkpoint-store.js";

export interface HibernatedSandbox {
  kind: CheckpointKind;
  bytes: number;
  /** The sandbox id a memory checkpoint must come back under (its socket directory, its code uid). */
  sandboxId: string;
  /** The sandbox server's session: the same after a memory restore. */
  sandboxSessionId: string;
  pool: string;
  hibernatedAt: number;
}

/** The pool's sandboxes cannot hibernate (egress pools, the process runtime). */
export class NotHibernatableError extends Error {
  override readonly name = "NotHibernatableError";
}

/** The session's checkpoint is not in the store (deleted, or another node's local store). */
export class CheckpointMissingError extends Error {
  override readonly name = "CheckpointMissingError";
}

export interface HibernateInput {
  hibernation: SandboxCheckpoints;
  store: CheckpointStore;
  workspace: string;
  sessionId: string;
  runtimeId: string;
  sandboxId: string;
  sandboxSessionId: string;
  pool: PoolSpec;
  bounds: CheckpointBounds;
  /** Removes the sandbox's container, once its checkpoint is committed. */
  destroy: (runtimeId: string) => Promise<void>;
  now?: () => number;
}

export async function hibernateSandbox(input: HibernateInput): Promise<HibernatedSandbox> {
  const kind = input.hibernation.checkpointKindOf(input.pool);
  if (kind === undefined)
    throw new NotHibernatableError(`pool ${input.pool.name}'s sandboxes cannot hibernate`);
  const dir = await input.store.begin(input.workspace, input.sessionId, input.bounds);
  try {
    await input.hibernation.checkpoint({
      runtimeId: input.runtimeId,
      sandboxId: input.sandboxId,
      sandboxSessionId: input.sandboxSessionId,
      dir,
      isolation: input.pool.isolation ?? "container",
    });
  } catch (error) {
    await input.store.abandon(dir);
    throw error;
  }
  const bytes = await input.store.commit(input.workspace, input.sessionId, dir);
  // Only now: a crash before the commit leaves the sandbox (a files checkpoint's still runs).
  await input.destroy(input.runtimeId);
  return {
    kind,
    bytes,
    sandboxId: input.sandboxId,
    sandboxSessionId: input.sandboxSessionId,
    pool: input.pool.name,
    hibernatedAt: (input.now ?? Date.now)(),
  };
}

export interface ResumeInput {
  hibernation: SandboxCheckpoints;
  store: CheckpointStore;
  workspace: string;
  sessionId: string;
  hibernated: HibernatedSandbox;
  pool: PoolSpec;
  deadline: number;
  /** A sandbox id for a fresh sandbox (a files checkpoint); a memory one keeps its own. */
  freshSandboxId: () => string;
  /** Opens the session in a fresh sandbox (a files checkpoint): its sandbox session id. */
  openSession: (sandbox: StartedSandbox) => Promise<string>;
  destroy: (runtimeId: string) => Promise<void>;
}

export interface ResumedSandbox extends StartedSandbox {
  sandboxId: string;
  sandboxSessionId: string;
  /** A files checkpoint: the interpreter started anew (the first call's stderr says so). */
  interpreterRestarted: boolean;
}

export async function resumeSandbox(input: ResumeInput): Promise<ResumedSandbox> {
  const { hibernated } = input;
  const dir = await input.store.locate(input.workspace, input.sessionId);
  if (dir === undefined)
    throw new CheckpointMissingError(
      `no checkpoint of session ${input.sessionId} in ${input.store.location}`,
    );
  const sandboxId = hibernated.kind === "memory" ? hibernated.sandboxId : input.freshSandboxId();
  const started = await input.hibernation.restore({
    sandboxId,
    pool: input.pool,
    deadline: input.deadline,
    kind: hibernated.kind,
    dir,
  });
  if (hibernated.kind === "memory") {
    return {
      ...started,
      sandboxId,
      sandboxSessionId: hibernated.sandboxSessionId,
      interpreterRestarted: false,
    };
  }
  try {
    const sandboxSessionId = await input.openSession(started);
    await input.hibernation.restoreFiles({ runtimeId: started.runtimeId, sandboxId, sandboxSessionId, dir });
    return { ...started, sandboxId, sandboxSessionId, interpreterRestarted: true };
  } catch (error) {
    await input.destroy(started.runtimeId).catch(() => undefined);
    throw error;
  }
}

/** What the first call after a files resume prefixes to its stderr. */
export const INTERPRETER_RESTARTED_NOTE =
  "sandpool: this session was hibernated and resumed with its files only; the Python interpreter restarted, so variables and imports from earlier calls are gone.\n";
