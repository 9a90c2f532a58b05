/**
 * The shapes of the usage operations: a workspace's durable usage per kind and tool
 * (`/workspaces/{ws}/usage`) and the report per hour or UTC day (`/usage`, whose answer's
 * schema is src/metering/usage-report-schema.ts, the report's type made from it).
 */
import { z } from "zod";
import { usageKinds } from "../../store/sql/usage-event.js";
import { instant, oneOf, requiredWorkspace } from "./admin-params.js";

export { usageReportResultSchema } from "../../metering/usage-report-schema.js";

export const usageSummaryQuerySchema = z.object({
  from: instant("from", "Start of the range, included (a day before `to`)."),
  to: instant("to", "End of the range, excluded (now)."),
});

export const usageSummaryResultSchema = z.object({
  workspace: z.string(),
  from: z.string(),
  to: z.string(),
  usage: z.array(
    z.object({
      kind: z.enum(usageKinds),
      tool: z.string().nullable(),
      count: z.number().meta({ description: "Number of events." }),
      quantity: z.number().meta({ description: "Sum of their quantities." }),
    }),
  ),
});

export const usageReportQuerySchema = z.object({
  workspace: requiredWorkspace,
  since: instant("since", "Start of the report (24 hours before `until`)."),
  until: instant("until", "End of the report (now)."),
  by: oneOf("by", ["hour", "day"], "Bucket size (day)."),
});
