/**
 * A session layer over a session table kept in memory, for the unit tests of the pipeline's
 * resolve, policy and admit steps: the real SessionCalls, with the lifecycle's two reads
 * standing in (each counted, so a test can see the one round trip).
 */
import { SandpoolError } from "../../../src/contract/error-codes.js";
import type { OpenCall } from "../../../src/operations/resolved-session.js";
import type { EffectivePolicy } from "../../../src/policy/effective-policy.js";
import { effectivePolicy } from "../../../src/policy/effective-policy.js";
import type { WorkspacePolicyFields } from "../../../src/policy/workspace-policy-fields.js";
import { SessionCalls } from "../../../src/session/session-calls.js";
import type { CallOptions } from "../../../src/session/session-lifecycle.js";
import type { Lease, LeaseKey } from "../../../src/store/coordination/records.js";
import { deployment } from "../policy/deployment.js";

export function sessionSteps(options: { sessions?: string[]; row?: WorkspacePolicyFields } = {}) {
  const live = new Set(options.sessions ?? []);
  const counted = { resolves: 0, begins: [] as CallOptions[] };
  const leaseOf = (key: LeaseKey) => ({ sessionId: key.sessionId, workspace: key.workspace }) as Lease;
  const policy: EffectivePolicy = effectivePolicy("ws-1", deployment({}), options.row);
  const sessions = {
    async resolve(key: LeaseKey): Promise<Lease> {
      counted.resolves++;
      if (!live.has(key.sessionId)) throw new SandpoolError("session.not_found", "no such session");
      return leaseOf(key);
    },
    async beginCall(key: LeaseKey, callOptions: CallOptions): Promise<OpenCall> {
      counted.begins.push(callOptions);
      if (!live.has(key.sessionId)) throw new SandpoolError("session.not_found", "no such session");
      return {
        lease: leaseOf(key),
        grantedMs: callOptions.budget?.requestedMs ?? 0,
        end: async () => 0,
        ending: () => async () => 0,
      };
    },
  };
  const calls = new SessionCalls({
    sessions,
    policies: { forWorkspace: async () => policy },
    limits: { execDeadlineBufferMs: 5_000, sandboxRequestTimeoutMs: 30_000 },
  });
  return { calls, counted, policy };
}
