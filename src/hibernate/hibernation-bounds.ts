/** What a workspace's policy bounds of its hibernated sessions (src/hibernate/checkpoint-store.ts). */
import type { EffectivePolicy } from "../policy/effective-policy.js";
import type { CheckpointBounds } from "./checkpoint-store.js";

export function hibernationBounds(policy: EffectivePolicy): CheckpointBounds {
  return policy.maxHibernatedSessions === null ? {} : { maxCheckpoints: policy.maxHibernatedSessions };
}
