/**
 * The shape of a usage report (usage-report.ts, `GET /admin/v1/usage`): declared once, as the
 * admin API's schema, and the report's TypeScript types taken from it.
 */
import { z } from "zod";

const totals = {
  sessions: z.number(),
  execCalls: z.number(),
  execSeconds: z.number(),
  // Sessions' lifetimes, summed when they end.
  sandboxSeconds: z.number(),
  // CPU time the sandboxes' cgroups recorded, at session end, where the runtime reports it.
  cpuSeconds: z.number(),
  // The most memory one sandbox held at once, where the runtime reports it.
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
