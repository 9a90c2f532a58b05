/**
 * The audit trails in one read (src/store/sql/audit-repository.ts): contract calls refused
 * after authentication (policy, quota, capacity, unknown session), each with `operation`,
 * `code`, `at`, `principal` and how many refusals of that operation and code in that second
 * it stands for, and operators' changes (policy edits, keys, sessions ended, pools resized),
 * newest first. Without `kind`, both; without `workspace`, every workspace's.
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { UsageSink } from "../metering/usage-sink.js";
import { adminOperations } from "../operations/admin-operations.js";
import { given, instantOf } from "../operations/admin-schemas/admin-params.js";
import { DEFAULT_AUDIT_ITEMS } from "../operations/admin-schemas/audit-schemas.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import type { AuditRepository } from "../store/sql/audit-repository.js";
import { answer } from "./admin-call.js";

export interface AuditDeps {
  audit: Pick<AuditRepository, "list">;
  /** Flushed first: this replica's refusals still buffered are part of the answer. */
  usage: Pick<UsageSink, "flush">;
}

export function auditHandlers({ audit, usage }: AuditDeps): OperationHandlers {
  return handlersFor(adminOperations, {
    "admin.audit.list": async ({ args }) => {
      const since = instantOf(args.query.since);
      const until = instantOf(args.query.until);
      if (since && until && since.getTime() >= until.getTime())
        throw new SandpoolError("request.malformed", "since must be before until");
      // This replica's refusals still in the usage buffer are part of the answer.
      await usage.flush().catch(() => undefined);
      const items = await audit.list({
        workspace: given(args.query.workspace),
        kind: given(args.query.kind),
        since,
        until,
        limit: args.query.limit ? Number(args.query.limit) : DEFAULT_AUDIT_ITEMS,
      });
      return answer({ items });
    },
  });
}
