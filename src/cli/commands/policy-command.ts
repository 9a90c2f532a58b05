/**
 * `sandpool policy`: operators read and edit workspace policy through the gateway's admin API
 * (`/admin/v1`), over HTTP, with an admin token. Every edit is validated by the gateway (a
 * workspace may only narrow the deployment), audited, and in force on every replica within a
 * second. Exit codes: 0 done, 1 the gateway refused or could not be reached, 2 bad usage.
 *
 * The HTTP client lives in ../admin/admin-client.ts, shared rendering in ../admin/admin-render.ts,
 * policy rendering in ./policy-render.ts.
 */
import { Command, InvalidArgumentError } from "commander";
import {
  type PolicyFieldKind,
  type PolicyFieldSpec,
  policyFieldNames,
  policyFields,
} from "../../policy-schema/policy-fields.js";
import {
  ADMIN_USAGE_EXIT_CODE,
  AdminUsageError,
  adminCall,
  adminConnection,
  type ConnectionOptions,
} from "../admin/admin-client.js";
import {
  examples,
  listOption,
  runAdmin,
  sinceOption,
  usageExits,
  withConnection,
  workspaceArgument,
} from "../admin/admin-command-kit.js";
import { out, printJson, table } from "../admin/admin-render.js";
import { integerOption } from "../parse-number.js";
import { applyCommand, exportCommand } from "./policy-apply-command.js";
import {
  describeChange,
  fieldOfFlag,
  formatQuantity,
  narrowings,
  type PolicyField,
  renderPolicy,
} from "./policy-render.js";

// Kept for the commands written against this file before the split: import from
// ../admin/admin-client.js and ../admin/admin-command-kit.js instead.
export {
  ADMIN_USAGE_EXIT_CODE,
  type AdminAnswer,
  AdminCliError,
  type AdminConnection,
  AdminUsageError,
  adminCall,
  adminConnection,
  type ConnectionOptions,
  DEFAULT_ADMIN_URL,
} from "../admin/admin-client.js";
export {
  examples,
  listOption,
  runAdmin,
  sinceOption,
  usageExits,
  withConnection,
  workspaceArgument,
} from "../admin/admin-command-kit.js";
export { csv, formatValue, out, printJson, table } from "../admin/admin-render.js";

export const POLICY_USAGE_EXIT_CODE = ADMIN_USAGE_EXIT_CODE;

const run = <A extends unknown[]>(action: (...args: A) => Promise<void>) =>
  runAdmin("sandpool policy", action);
const connection = adminConnection;
const call = adminCall;

// ---------------------------------------------------------------------------------------------
// Arguments

function clearOption(value: string, previous: PolicyField[] = []): PolicyField[] {
  const field =
    fieldOfFlag[value.replace(/^--/, "") as keyof typeof fieldOfFlag] ??
    Object.values(fieldOfFlag).find((name) => name === value);
  if (field === undefined) {
    throw new InvalidArgumentError(
      `unknown field '${value}' (one of ${Object.keys(fieldOfFlag)
        .filter((name) => name !== "enabled")
        .join(", ")})`,
    );
  }
  if (field === "enabled")
    throw new InvalidArgumentError("enabled cannot be cleared: use --enable or --disable");
  return [...previous, field];
}

/** How `policy set` reads a field's value from its flag, by the field's kind. */
const parserOf: Partial<Record<PolicyFieldKind, (value: string) => unknown>> = {
  flag: booleanOption,
  count: integerOption(1),
  bytes: integerOption(1),
  limit: integerOption(1),
  idleSeconds: integerOption(5),
  names: listOption,
  tools: listOption,
  cidrs: listOption,
  hosts: listOption,
};

function booleanOption(value: string): boolean {
  if (value === "true") return true;
  if (value === "false") return false;
  throw new InvalidArgumentError("true or false");
}

/** The fields `policy set` takes a value for: those with a flag argument in the table. */
const valueFields = policyFieldNames.filter((field) => (policyFields[field] as PolicyFieldSpec).argument);

/** The key commander gives a flag's value: `--exec-timeout-ceiling` is `execTimeoutCeiling`. */
const optionKey = (field: PolicyField) =>
  policyFields[field].flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

/** One `--<flag> <value>` option per field that takes a value, in the table's order. */
function withFieldOptions(command: Command): Command {
  for (const field of valueFields) {
    const { flag, argument, description, kind } = policyFields[field] as PolicyFieldSpec;
    const parse = parserOf[kind];
    const flags = `--${flag} ${argument}`;
    if (parse) command.option(flags, description, parse);
    else command.option(flags, description);
  }
  return command;
}

interface SetOptions extends ConnectionOptions {
  /** A value per field flag given, under its optionKey. */
  [option: string]: unknown;
  enable?: boolean;
  disable?: boolean;
  clear?: PolicyField[];
}

/** The edit `policy set` sends: only the fields given, null for each `--clear`. */
export function editOf(options: SetOptions): Record<string, unknown> {
  const edit: Record<string, unknown> = {};
  for (const field of valueFields) {
    const value = options[optionKey(field)];
    if (value !== undefined) edit[field] = value;
  }
  if (options.enable && options.disable)
    throw new AdminUsageError("--enable and --disable contradict each other");
  if (options.enable) edit.enabled = true;
  if (options.disable) edit.enabled = false;
  for (const field of options.clear ?? []) {
    if (field in edit) throw new AdminUsageError(`${field} is both set and cleared`);
    edit[field] = null;
  }
  if (Object.keys(edit).length === 0)
    throw new AdminUsageError(
      "nothing to change: give at least one field to set, --enable/--disable or --clear <field>",
    );
  return edit;
}

// ---------------------------------------------------------------------------------------------
// Commands

function listCommand(): Command {
  return withConnection(
    new Command("list")
      .summary("list the workspaces that have a policy row")
      .description(
        "List the workspaces that have a policy row, with what each row narrows. Workspaces without " +
          "a row run on the deployment defaults and are not listed.",
      )
      .addHelpText("after", examples("sandpool policy list", "sandpool policy list --json")),
  ).action(
    run(async (options: ConnectionOptions) => {
      const conn = connection(options);
      const { body } = await call(conn, "get", "/admin/v1/workspaces");
      if (conn.json) return printJson(body);
      const rows = body.workspaces;
      if (rows.length === 0)
        return out("no workspace has a policy row: every workspace runs on the deployment defaults");
      out(
        table(
          ["WORKSPACE", "ENABLED", "VERSION", "UPDATED", "BY", "NARROWS"],
          rows.map((row) => [
            row.workspaceId,
            String(row.enabled),
            String(row.version),
            row.updatedAt,
            row.updatedBy,
            narrowings(row)
              .filter((item) => !item.startsWith("enabled="))
              .join(" ") || "-",
          ]),
        ),
      );
    }),
  );
}

function getCommand(): Command {
  return withConnection(
    new Command("get")
      .summary("show the policy in force for a workspace, and where each value comes from")
      .description(
        "Show the policy in force for a workspace: every field, the value in force, and its source " +
          "(the deployment, or the workspace's row). A row may only narrow the deployment.",
      )
      .argument("<workspace>", "the workspace id", workspaceArgument)
      .addHelpText(
        "after",
        examples(
          "sandpool policy get team-a",
          "sandpool policy get team-a --url https://sandpool.internal --token $SANDPOOL_ADMIN_TOKEN",
          "sandpool policy get team-a --json | jq .effective",
        ),
      ),
  ).action(
    run(async (workspace: string, options: ConnectionOptions) => {
      const conn = connection(options);
      const { body } = await call(conn, "get", "/admin/v1/workspaces/{ws}/policy", {
        path: { ws: workspace },
      });
      if (conn.json) return printJson(body);
      out(renderPolicy(body));
    }),
  );
}

function setCommand(): Command {
  return withConnection(
    withFieldOptions(
      new Command("set")
        .summary("narrow a workspace's policy (only the fields given change)")
        .description(
          "Create or edit a workspace's policy row. Only the fields given change; --clear <field> removes " +
            "a narrowing (the deployment value applies again). A value above the deployment's ceiling is " +
            "refused, with every problem listed. The edit is audited and in force on every replica within " +
            "a second.",
        )
        .argument("<workspace>", "the workspace id", workspaceArgument),
    )
      .option("--enable", "let the workspace create sessions again")
      .option("--disable", "refuse the workspace's new sessions (kill switch)")
      .option("--clear <field>", "remove a narrowing, e.g. max-concurrent-sessions (repeatable)", clearOption)
      .addHelpText(
        "after",
        "\nExamples:\n" +
          "  sandpool policy set team-a --max-concurrent-sessions 3 --sessions-per-minute 10\n" +
          "  sandpool policy set team-a --allowed-tools code_execution,bash_code_execution\n" +
          "  sandpool policy set team-a --disable                 # kill switch\n" +
          "  sandpool policy set team-a --egress-allow-hosts pypi.org,*.pythonhosted.org\n" +
          "  sandpool policy set team-a --egress-allow-cidrs 10.1.0.0/16\n" +
          "  sandpool policy set team-a --clear max-concurrent-sessions --enable\n",
      ),
  ).action(
    run(async (workspace: string, options: SetOptions) => {
      const edit = editOf(options);
      const conn = connection(options);
      const { body } = await call(conn, "put", "/admin/v1/workspaces/{ws}/policy", {
        path: { ws: workspace },
        body: edit,
      });
      if (conn.json) return printJson(body);
      const view = body;
      out(`updated the policy of ${workspace} (${Object.keys(edit).join(", ")})\n`);
      out(renderPolicy(view));
    }),
  );
}

function deleteCommand(): Command {
  return withConnection(
    new Command("delete")
      .summary("remove a workspace's policy row (the deployment defaults apply again)")
      .description(
        "Remove a workspace's policy row: the deployment defaults apply again, on every replica within " +
          "a second. The removal is audited. Removing a row that does not exist is not an error.",
      )
      .argument("<workspace>", "the workspace id", workspaceArgument)
      .addHelpText("after", examples("sandpool policy delete team-a")),
  ).action(
    run(async (workspace: string, options: ConnectionOptions) => {
      const conn = connection(options);
      await call(conn, "delete", "/admin/v1/workspaces/{ws}/policy", { path: { ws: workspace } });
      if (conn.json) return printJson({ workspace, deleted: true });
      out(`removed the policy row of ${workspace}: the deployment defaults apply`);
    }),
  );
}

function auditCommand(): Command {
  return withConnection(
    new Command("audit")
      .summary("show who changed a workspace's policy, when, and what")
      .description(
        "Show a workspace's policy edits, newest first: who, when, and each field's before and after.",
      )
      .argument("<workspace>", "the workspace id", workspaceArgument)
      .option("--limit <n>", "most entries to show", integerOption(1, 1000), 100)
      .addHelpText(
        "after",
        examples("sandpool policy audit team-a", "sandpool policy audit team-a --limit 5"),
      ),
  ).action(
    run(async (workspace: string, options: ConnectionOptions & { limit: number }) => {
      const conn = connection(options);
      const { body } = await call(conn, "get", "/admin/v1/workspaces/{ws}/audit", {
        path: { ws: workspace },
        query: { limit: String(options.limit) },
      });
      if (conn.json) return printJson(body);
      const entries = body.entries;
      if (entries.length === 0) return out(`no policy edits recorded for ${workspace}`);
      out(
        table(
          ["ID", "AT", "ACTOR", "CHANGE"],
          entries.map((entry) => [String(entry.id), entry.at, entry.actor, describeChange(entry)]),
        ),
      );
    }),
  );
}

function usageCommand(): Command {
  return withConnection(
    new Command("usage")
      .summary("show a workspace's recorded usage")
      .description(
        "Show a workspace's recorded usage (sessions, calls and their execution time, files moved), " +
          "per kind and tool, from --since until now.",
      )
      .argument("<workspace>", "the workspace id", workspaceArgument)
      .option(
        "--since <when>",
        "start of the window: a duration (30m, 24h, 7d) or an ISO date (default 24h)",
        sinceOption,
      )
      .addHelpText(
        "after",
        examples(
          "sandpool policy usage team-a",
          "sandpool policy usage team-a --since 7d",
          "sandpool policy usage team-a --since 2025-01-01",
        ),
      ),
  ).action(
    run(async (workspace: string, options: ConnectionOptions & { since?: string }) => {
      const conn = connection(options);
      const { body } = await call(conn, "get", "/admin/v1/workspaces/{ws}/usage", {
        path: { ws: workspace },
        query: { from: options.since || undefined },
      });
      if (conn.json) return printJson(body);
      const answer = body;
      out(`usage of ${workspace} from ${answer.from} to ${answer.to}\n`);
      if (answer.usage.length === 0) return out("no usage recorded in that window");
      out(
        table(
          ["KIND", "TOOL", "COUNT", "QUANTITY"],
          answer.usage.map((row) => [row.kind, row.tool ?? "-", String(row.count), formatQuantity(row)]),
        ),
      );
    }),
  );
}

export function policyCommand(): Command {
  return usageExits(
    new Command("policy")
      .summary("read and edit workspace policy through the admin API")
      .description(
        "Read and edit workspace policy through the gateway's admin API (/admin/v1), with an admin " +
          "token. A workspace's row may only narrow the deployment; every edit is audited and in force " +
          "on every replica within a second.\n\n" +
          "Every sub-command takes --url (env SANDPOOL_URL, default http://127.0.0.1:8080), --token " +
          "(env SANDPOOL_ADMIN_TOKEN; `sandpool dev` prints one) and --json (the raw answer).\n\n" +
          "Exit codes: 0 done, 1 refused by the gateway or unreachable, 2 bad usage.",
      )
      .addHelpText(
        "after",
        "\nExamples:\n" +
          "  export SANDPOOL_URL=http://127.0.0.1:8080 SANDPOOL_ADMIN_TOKEN=...\n" +
          "  sandpool policy list\n" +
          "  sandpool policy get team-a\n" +
          "  sandpool policy set team-a --max-concurrent-sessions 3 --exec-seconds-per-day 3600\n" +
          "  sandpool policy set team-a --disable\n" +
          "  sandpool policy audit team-a\n" +
          "  sandpool policy usage team-a --since 7d\n" +
          "  sandpool policy delete team-a\n" +
          "  sandpool policy apply -f policies.yaml --dry-run\n",
      )
      .addCommand(listCommand())
      .addCommand(getCommand())
      .addCommand(setCommand())
      .addCommand(deleteCommand())
      .addCommand(auditCommand())
      .addCommand(usageCommand())
      .addCommand(applyCommand())
      .addCommand(exportCommand()),
  );
}
