/**
 * An Admission on a memory store with a clock the test moves, and the effective policy of
 * workspace `ws` with the given quota limits: the set-up the admission and preview tests share.
 */

import { Admission } from "../../../src/admission/admission.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import { deployment } from "../policy/deployment.js";

export const NOON = Date.UTC(2030, 0, 15, 12, 0, 0);
export const HOUR = 3_600_000;

export function admissionOnClock(limits: {
  maxConcurrentSessions?: number;
  sessionsPerMinute?: number;
  execSecondsPerDay?: number;
}) {
  let time = NOON;
  const store = new MemoryCoordinationStore();
  const admission = new Admission(store, () => time);
  const policy = effectivePolicy("ws", deployment(limits), undefined);
  return {
    store,
    admission,
    policy,
    now: () => time,
    set: (t: number) => {
      time = t;
    },
    advance: (ms: number) => {
      time += ms;
    },
  };
}
