/**
 * What a runtime keeps of a sandbox when its session hibernates (docs/hibernate.md):
 * `memory` (gVisor: the whole sandbox, its interpreter's variables and files, restored into
 * a new container) or `files` (any container: the session's workspace, restored into a fresh
 * sandbox whose interpreter starts anew). A checkpoint is written into, and read from, a
 * directory the checkpoint store gives (src/hibernate/); the runtime never chooses where.
 */
import type { Isolation } from "../policy-schema/isolation-levels.js";
import type { PoolSpec, SandboxRuntime, StartedSandbox } from "./sandbox-runtime.js";

export type CheckpointKind = "memory" | "files";

export interface CheckpointRequest {
  runtimeId: string;
  sandboxId: string;
  /** The sandbox server's session whose workspace a `files` checkpoint keeps. */
  sandboxSessionId: string;
  /** Empty, private directory of the store: the checkpoint is written here. */
  dir: string;
  isolation: Isolation;
}

export interface SavedCheckpoint {
  kind: CheckpointKind;
  /** Bytes the checkpoint holds on disk (what usage meters). */
  bytes: number;
}

export interface RestoreCheckpointRequest {
  /** The sandbox id it had: a memory checkpoint restores its socket directory and code uid. */
  sandboxId: string;
  pool: PoolSpec;
  deadline: number;
  kind: CheckpointKind;
  dir: string;
}

/** A `files` checkpoint into a session of a running sandbox (any of the pool's: a warm one). */
export interface FilesRestore {
  runtimeId: string;
  /** The sandbox's id: whose code uid writes the files. */
  sandboxId: string;
  sandboxSessionId: string;
  dir: string;
}

export interface SandboxCheckpoints {
  /** What hibernating a sandbox of this pool keeps; undefined: the pool's sandboxes cannot hibernate. */
  checkpointKindOf(pool: PoolSpec): CheckpointKind | undefined;
  /**
   * Saves the sandbox into `dir`. The caller removes its container (`destroy`) once the
   * checkpoint is committed: a crash in between leaves a container, never a session without
   * either. A memory checkpoint stops the sandbox; a files checkpoint leaves it running. On a
   * failure before the save began the sandbox keeps running; gVisor ends a sandbox whose
   * checkpoint fails midway, which the error then says (`SandboxLostInCheckpointError`).
   */
  checkpoint(request: CheckpointRequest): Promise<SavedCheckpoint>;
  /**
   * A running sandbox from a checkpoint: for `memory`, the same sandbox (same session,
   * interpreter and files); for `files`, a fresh sandbox (the caller makes its session and
   * calls restoreFiles). `dir` is left as it was, for a retry.
   */
  restore(request: RestoreCheckpointRequest): Promise<StartedSandbox>;
  /** Puts a `files` checkpoint into a session of a restored sandbox. */
  restoreFiles(request: FilesRestore): Promise<void>;
}

/**
 * What the docker runtime keeps of a pool's sandboxes (an edge asks this of its pools, whose
 * sandboxes run on nodes' docker runtimes): egress sandboxes nothing (their proxy socket is
 * the gateway's), gVisor ones their memory, plain containers their workspace's files.
 */
export function dockerCheckpointKindOf(pool: PoolSpec): CheckpointKind | undefined {
  if (pool.egress === true) return undefined;
  return pool.isolation === "gvisor" ? "memory" : "files";
}

/** The checkpoint failed after gVisor had begun it: the sandbox is gone. */
export class SandboxLostInCheckpointError extends Error {
  override readonly name = "SandboxLostInCheckpointError";
}

/** A runtime's hibernation, where it has one (the docker runtime; never the process runtime). */
export function checkpointsOf(runtime: SandboxRuntime): SandboxCheckpoints | undefined {
  const candidate = (runtime as { hibernation?: SandboxCheckpoints }).hibernation;
  return candidate && typeof candidate.checkpoint === "function" ? candidate : undefined;
}
