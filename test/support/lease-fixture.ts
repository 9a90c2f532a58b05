/** Leases for tests of the coordination store: unique ids, a sandbox nobody listens on. */
import { randomBytes } from "node:crypto";
import type { Lease, LeaseKey } from "../../src/store/coordination/records.js";

let names = 0;
/** A name no other test of the run uses: `what-N-hex`. */
export const fresh = (what: string) => `${what}-${++names}-${randomBytes(3).toString("hex")}`;

/** A lease just made in `workspace` (idle timeout 10 min unless given, lifetime 1 h). */
export function leaseIn(workspace: string, idleTimeoutSeconds = 600): Lease {
  const now = Date.now();
  return {
    sessionId: fresh("sess"),
    workspace,
    pool: "default",
    image: "sandpool/sandbox:dev",
    sandbox: {
      sandboxId: fresh("sb"),
      pool: "default",
      endpoint: "http://127.0.0.1:1",
      runtimeId: fresh("rt"),
      innerSessionId: fresh("inner"),
      createdAt: now,
    },
    createdAt: now,
    lastActivityAt: now,
    idleTimeoutSeconds,
    maxLifetimeSeconds: 3_600,
  };
}

export const keyOf = (lease: Lease): LeaseKey => ({ workspace: lease.workspace, sessionId: lease.sessionId });
