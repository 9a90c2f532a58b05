/**
 * The shapes of the usage operations: a workspace's durable usage per kind and tool
 * (`/workspaces/{ws}/usage`) and the report per hour or UTC day (`/usage`,
 * src/metering/usage-report.ts).
 */
import { z } from "zod";
import { usageKinds } from "../../store/sql/usage-event.js";
import { instant, oneOf, requiredWorkspace } from "./admin-params.js";

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

const totals = {
  sessions: z.number(),
  execCalls: z.number(),
  execSeconds: z.number(),
  sandboxSeconds: z.number(),
  cpuSeconds: z.number(),
  memoryPeakBytes: z.number(),
  filesIn: z.number(),
  bytesIn: z.number(),
  filesOut: z.number(),
  bytesOut: z.number(),
  denied: z.number().meta({ description: "Requests refused by policy or quota." }),
  hibernations: z.number().meta({ description: "Sessions hibernated (saved to a checkpoint)." }),
  checkpointBytes: z.number().meta({ description: "Bytes of the checkpoints those hibernations saved." }),
};

export const usageReportResultSchema = z.object({
  workspace: z.string(),
  by: z.enum(["hour", "day"]),
  since: z.string(),
  until: z.string(),
  totals: z.object(totals),
  buckets: z.array(
    z.object({
      start: z.string(),
      ...totals,
      byTool: z.array(z.object({ tool: z.string(), execCalls: z.number(), execSeconds: z.number() })),
      byImage: z.array(
        z.object({
          image: z.string(),
          sessions: z.number(),
          execCalls: z.number(),
          execSeconds: z.number(),
          sandboxSeconds: z.number(),
          cpuSeconds: z.number(),
        }),
      ),
    }),
  ),
});
