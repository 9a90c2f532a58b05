/**
 * `sandpool audit [--workspace W] [--kind denied|admin] [--since 24h] [--until ...] [--limit N]`:
 * the audit trails through the admin API (`GET /admin/v1/audit`), newest first: contract calls
 * refused after authentication (policy, quota, capacity, unknown session) and operators'
 * changes (policy edits, keys, sessions ended, pools resized).
 * Exit codes: 0 done, 1 refused by the gateway or unreachable, 2 bad usage.
 */
import { Command, Option } from "commander";
import type { AuditItem } from "../../store/sql/audit-repository.js";
import { adminCall, adminConnection, type ConnectionOptions } from "../admin/admin-client.js";
import {
  examples,
  runAdmin,
  sinceFlag,
  sinceOption,
  untilFlag,
  usageExits,
  withConnection,
  workspaceArgument,
} from "../admin/admin-command-kit.js";
import { out, printJson, table } from "../admin/admin-render.js";
import { integerOption } from "../parse-number.js";

type AuditOptions = ConnectionOptions & {
  workspace?: string;
  kind?: "denied" | "admin";
  since?: string;
  until?: string;
  limit?: number;
};

/** One line per item: what happened, to what, by whom. */
export function renderAudit(items: readonly AuditItem[]): string {
  if (items.length === 0) return "nothing audited in that window";
  return table(
    ["AT", "KIND", "WORKSPACE", "WHAT", "CODE / TARGET", "WHO", "COUNT"],
    items.map((item) =>
      item.kind === "denied"
        ? [
            item.at,
            "denied",
            item.workspace,
            item.operation,
            item.code,
            item.principal ?? "-",
            String(item.count),
          ]
        : [item.at, "admin", item.workspace ?? "-", item.action, item.target, item.actor, "1"],
    ),
  );
}

export function auditCommand(): Command {
  return usageExits(
    withConnection(
      new Command("audit")
        .summary("list refused calls and operators' changes through the admin API")
        .description(
          "The audit trails from the admin API (/admin/v1/audit), newest first: contract calls refused " +
            "after authentication (kind denied: policy, quota, capacity, unknown session; identical " +
            "refusals within about a second are one line with their count) and operators' changes " +
            "(kind admin: policy edits, API keys created and revoked, sessions ended, pools resized).\n\n" +
            "Exit codes: 0 done, 1 refused by the gateway or unreachable, 2 bad usage.",
        )
        .option("--workspace <id>", "only this workspace's records", workspaceArgument)
        .addOption(
          new Option("--kind <kind>", "only refused calls or only admin changes").choices([
            "denied",
            "admin",
          ]),
        )
        .addOption(sinceFlag())
        .addOption(untilFlag())
        .option("--limit <n>", "at most this many records (1-1000, default 100)", integerOption(1, 1000))
        .addHelpText(
          "after",
          examples(
            "sandpool audit --workspace team-a --kind denied",
            "sandpool audit --kind admin --since 7d",
            "sandpool audit --workspace team-a --since 2026-01-01 --json",
          ),
        ),
    ).action(
      runAdmin("sandpool audit", async (options: AuditOptions) => {
        const conn = adminConnection(options);
        const query = new URLSearchParams({ since: options.since ?? sinceOption("24h") });
        if (options.workspace) query.set("workspace", options.workspace);
        if (options.kind) query.set("kind", options.kind);
        if (options.until) query.set("until", options.until);
        if (options.limit !== undefined) query.set("limit", String(options.limit));
        const { body } = await adminCall(conn, "get", "/admin/v1/audit", {
          query: Object.fromEntries(query),
        });
        if (conn.json) return printJson(body);
        out(renderAudit(body.items));
      }),
    ),
  );
}
