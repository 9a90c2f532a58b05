/**
 * Usage reports in the admin API (src/metering/usage-report.ts):
 *
 *   GET /usage?workspace=W&since=&until=&by=hour|day
 *       200 { workspace, by, since, until, totals, buckets: [{ start, sessions, execCalls,
 *             execSeconds, sandboxSeconds, cpuSeconds, memoryPeakBytes, filesIn, bytesIn,
 *             filesOut, bytesOut, denied, byTool: [...], byImage: [...] }] }
 *
 * `workspace` is required: a report is always one workspace's, never a mix. `until` defaults
 * to now, `since` to 24 hours before it, `by` to day. Buckets cover whole hours or UTC days.
 */
import { Hono } from "hono";
import { workspaceIdPattern } from "../../auth/workspace-claim.js";
import { SandpoolError } from "../../contract/error-codes.js";
import type { UsageBucketSize } from "../../metering/usage-report.js";
import type { GatewayServices } from "../gateway-services.js";
import { type AdminEnv, dateQuery } from "./admin-routes.js";

const DAY_MS = 86_400_000;

export function adminUsageRoutes(services: GatewayServices): Hono<AdminEnv> {
  const routes = new Hono<AdminEnv>();

  routes.get("/", async (c) => {
    c.set("operation", "AdminUsageReport");
    const reports = services.usageReports;
    if (!reports) throw new SandpoolError("request.not_found", "usage reports are not available here");
    const workspace = c.req.query("workspace") ?? "";
    if (!workspaceIdPattern.test(workspace))
      throw new SandpoolError(
        "request.malformed",
        workspace === ""
          ? "workspace is required (?workspace=<id>): a report covers one workspace"
          : "workspace is not a valid workspace id (letters, digits, . _ : -; 128 at most, starting with a letter or digit)",
      );
    const by = c.req.query("by") ?? "day";
    if (by !== "hour" && by !== "day")
      throw new SandpoolError("request.malformed", `by must be hour or day, got '${by}'`);
    const until = dateQuery(c.req.query("until"), "until") ?? new Date();
    const since = dateQuery(c.req.query("since"), "since") ?? new Date(until.getTime() - DAY_MS);
    return c.json(await reports.report(workspace, since, until, by as UsageBucketSize));
  });

  return routes;
}
