/**
 * What edges and nodes agree on over the node API besides signatures (node-signature.ts):
 * the ids a route's path may carry, and the answers both sides read.
 */
import type { CheckpointKind } from "../../runtime/sandbox-checkpoints.js";

/** A sandbox id in a node route's path (a capture group). */
export const SANDBOX_ID_PATTERN = "([0-9a-f]{1,64})";
/** A session id in a node route's path (a capture group), as the checkpoint store accepts them. */
export const SESSION_ID_PATTERN = "([A-Za-z0-9_-]{1,128})";

/** A checkpoint's outcome on a node: a sandbox gVisor ended midway is `lost` (the edge ends its session). */
export type NodeSaveOutcome =
  | { outcome: "saved"; kind: CheckpointKind; bytes: number }
  | { outcome: "lost"; message: string };
