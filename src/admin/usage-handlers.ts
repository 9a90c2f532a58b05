/**
 * Usage in the admin API: a workspace's durable usage over a range, per kind and tool (the
 * last 24 hours unless asked), and the report per hour or UTC day (src/metering/usage-report.ts),
 * always one workspace's, never a mix; buckets cover whole hours or UTC days.
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { UsageReports } from "../metering/usage-report.js";
import { adminOperations } from "../operations/admin-operations.js";
import { given, instantOf } from "../operations/admin-schemas/admin-params.js";
import type { OperationHandlers } from "../operations/handler.js";
import { handlersFor } from "../operations/typed-handlers.js";
import type { UsageSummaryRow } from "../store/sql/usage-event.js";
import { answer } from "./admin-call.js";

const DAY_MS = 86_400_000;

export interface UsageDeps {
  /** A workspace's durable usage with `from <= occurredAt < to`, per kind and tool. */
  usageSummary: (workspace: string, from: Date, to: Date) => Promise<UsageSummaryRow[]>;
  /** Usage reports per hour or UTC day. */
  usageReports: Pick<UsageReports, "report">;
}

export function usageHandlers({ usageSummary, usageReports }: UsageDeps): OperationHandlers {
  return handlersFor(adminOperations, {
    "admin.usage.summary": async ({ args }) => {
      const workspace = args.params.ws;
      const to = instantOf(args.query.to) ?? new Date();
      const from = instantOf(args.query.from) ?? new Date(to.getTime() - DAY_MS);
      if (from.getTime() >= to.getTime())
        throw new SandpoolError("request.malformed", "from must be before to");
      const usage = await usageSummary(workspace, from, to);
      return answer({ workspace, from: from.toISOString(), to: to.toISOString(), usage });
    },

    "admin.usage.report": async ({ args }) => {
      const by = given(args.query.by) ?? "day";
      const until = instantOf(args.query.until) ?? new Date();
      const since = instantOf(args.query.since) ?? new Date(until.getTime() - DAY_MS);
      return answer(await usageReports.report(args.query.workspace, since, until, by));
    },
  });
}
