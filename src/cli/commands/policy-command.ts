/**
 * `sandpool policy`: operators read and edit workspace policy through the gateway's admin API
 * (`/admin/v1`), over HTTP, with an admin token. Every edit is validated by the gateway (a
 * workspace may only narrow the deployment), audited, and in force on every replica within a
 * second. Exit codes: 0 done, 1 the gateway refused or could not be reached, 2 bad usage.
 */
import { Command, type CommanderError, InvalidArgumentError, Option } from "commander";
import { workspaceIdPattern } from "../../auth/workspace-claim.js";
import { integerOption } from "../parse-number.js";

export const POLICY_USAGE_EXIT_CODE = 2;
const DEFAULT_URL = "http://127.0.0.1:8080";
const REQUEST_TIMEOUT_MS = 30_000;

/** Bad usage: exit code 2. */
export class UsageError extends Error {}
/** The gateway refused, or could not be reached: exit code 1. */
export class PolicyCliError extends Error {}

export interface ConnectionOptions {
  url?: string;
  token?: string;
  json?: boolean;
}

/** `--flag` name -> the admin API's field, for `policy set` and `--clear`. */
const fieldOfFlag = {
  enabled: "enabled",
  "allowed-images": "allowedImages",
  "default-image": "defaultImage",
  "allowed-tools": "allowedTools",
  "exec-timeout-ceiling": "execTimeoutCeilingSeconds",
  "idle-timeout-ceiling": "idleTimeoutCeilingSeconds",
  "max-lifetime-ceiling": "maxLifetimeCeilingSeconds",
  "max-concurrent-sessions": "maxConcurrentSessions",
  "sessions-per-minute": "sessionsPerMinute",
  "exec-seconds-per-day": "execSecondsPerDay",
  "max-file-bytes": "maxFileBytes",
  "resource-class": "resourceClass",
  "egress-allowed": "egressAllowed",
  "egress-allow-cidrs": "egressAllowCidrs",
  "egress-allow-hosts": "egressAllowHosts",
} as const;
type PolicyField = (typeof fieldOfFlag)[keyof typeof fieldOfFlag];

/** The order `policy get` shows the effective policy in. */
const effectiveFields = [
  "enabled",
  "allowedImages",
  "defaultImage",
  "allowedTools",
  "execTimeoutCeilingSeconds",
  "defaultExecTimeoutSeconds",
  "idleTimeoutCeilingSeconds",
  "defaultIdleTimeoutSeconds",
  "maxLifetimeCeilingSeconds",
  "defaultMaxLifetimeSeconds",
  "maxConcurrentSessions",
  "sessionsPerMinute",
  "execSecondsPerDay",
  "maxFileBytes",
  "resourceClass",
  "egressAllowed",
  "egressAllowCidrs",
  "egressAllowHosts",
] as const;

// ---------------------------------------------------------------------------------------------
// The admin API over HTTP

export interface Connection {
  base: string;
  url: string;
  token: string;
  json: boolean;
}

export function connection(options: ConnectionOptions): Connection {
  const url = options.url && options.url.trim() !== "" ? options.url.trim() : DEFAULT_URL;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url '${url}' is not a URL (for example ${DEFAULT_URL})`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new UsageError(`--url '${url}' must be an http:// or https:// URL`);
  const token = options.token?.trim() ?? "";
  if (token === "") {
    throw new UsageError(
      "no admin token: pass --token or set SANDPOOL_ADMIN_TOKEN (`sandpool dev` prints one as SANDPOOL_ADMIN_TOKEN=...)",
    );
  }
  return { base: `${url.replace(/\/+$/, "")}/admin/v1`, url, token, json: options.json === true };
}

interface Answer {
  status: number;
  body: unknown;
}

export async function call(conn: Connection, method: string, path: string, body?: unknown): Promise<Answer> {
  const { request } = await import("undici");
  let response: Awaited<ReturnType<typeof request>>;
  try {
    response = await request(`${conn.base}${path}`, {
      method: method as "GET",
      headers: {
        authorization: `Bearer ${conn.token}`,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      headersTimeout: REQUEST_TIMEOUT_MS,
      bodyTimeout: REQUEST_TIMEOUT_MS,
    });
  } catch (error) {
    throw new PolicyCliError(`cannot reach sandpool at ${conn.url}: ${describeNetworkError(error)}`);
  }
  const text = await response.body.text();
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    throw new PolicyCliError(
      `unexpected answer from ${conn.url} (HTTP ${response.statusCode}, not JSON): is it a sandpool gateway?`,
    );
  }
  if (response.statusCode >= 200 && response.statusCode < 300)
    return { status: response.statusCode, body: parsed };
  throw new PolicyCliError(describeRefusal(conn, response.statusCode, parsed));
}

function describeNetworkError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0)
    return describeNetworkError(error.errors[0]);
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (error.message) return error.message;
    if (code) return code;
  }
  return String(error);
}

interface ErrorDetail {
  code?: string;
  message?: string;
  problems?: string[];
}

function describeRefusal(conn: Connection, status: number, body: unknown): string {
  const detail = ((body as { detail?: ErrorDetail } | undefined)?.detail ?? {}) as ErrorDetail;
  const what = `${status}${detail.code ? ` ${detail.code}` : ""}`;
  switch (status) {
    case 401:
      return (
        `the gateway refused the token (${what}): it is missing, expired, or not signed with a key the gateway trusts.\n` +
        "Pass an admin token with --token or SANDPOOL_ADMIN_TOKEN (`sandpool dev` prints one as SANDPOOL_ADMIN_TOKEN=...)."
      );
    case 403:
      return (
        `the token is valid but is not an admin token (${what}).\n` +
        "The admin API needs a token whose admin claim (auth.adminClaim, default sandpool_admin) is true."
      );
    case 422: {
      const problems = detail.problems ?? (detail.message ? detail.message.split("; ") : []);
      return `the gateway refused the request (${what}):\n${problems.map((p) => `  - ${p}`).join("\n")}`;
    }
    case 429:
      return `the gateway is limiting this client (${what}): ${detail.message ?? "too many requests"}; try again shortly`;
    default:
      if (status === 404 && detail.code === undefined)
        return `no admin API at ${conn.url} (HTTP 404): is it a sandpool gateway?`;
      return `the gateway answered ${what}: ${detail.message ?? "no detail"}`;
  }
}

// ---------------------------------------------------------------------------------------------
// What the admin API answers (see src/http/routes/admin-routes.ts)

interface PolicyRow extends Record<string, unknown> {
  workspaceId: string;
  enabled: boolean;
  version: number;
  updatedAt: string;
  updatedBy: string;
}

interface PolicyView {
  workspace: string;
  configured: boolean;
  row: PolicyRow | null;
  effective: Record<string, unknown>;
  sources: Record<string, "deployment" | "workspace">;
}

interface AuditEntry {
  id: number;
  actor: string;
  at: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

interface UsageRow {
  kind: string;
  tool: string | null;
  count: number;
  quantity: number;
}

// ---------------------------------------------------------------------------------------------
// Rendering

export function out(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function printJson(value: unknown): void {
  out(JSON.stringify(value ?? null, null, 2));
}

/** Columns padded to their widest cell; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? "").length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

function formatValue(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (Array.isArray(value)) return value.length === 0 ? "(none)" : value.join(",");
  return String(value);
}

/** The fields a row narrows (set, not null), as `field=value`. */
function narrowings(row: Record<string, unknown>): string[] {
  return Object.values(fieldOfFlag)
    .filter(
      (field) =>
        row[field] !== null && row[field] !== undefined && !(field === "enabled" && row[field] === true),
    )
    .map((field) => `${field}=${formatValue(row[field])}`);
}

function renderPolicy(view: PolicyView): string {
  const heading = view.row
    ? `workspace ${view.workspace}: policy row version ${view.row.version}, updated ${view.row.updatedAt} by ${view.row.updatedBy}`
    : `workspace ${view.workspace}: no policy row; the deployment defaults apply`;
  const rows = effectiveFields.map((field) => [
    field,
    // An empty host list restricts nothing: every host may be reached.
    field === "egressAllowHosts" && formatValue(view.effective[field]) === "(none)"
      ? "(any host)"
      : formatValue(view.effective[field]),
    view.sources[field] === "workspace" ? "workspace row" : "deployment",
  ]);
  return `${heading}\n\n${table(["FIELD", "VALUE IN FORCE", "SOURCE"], rows)}`;
}

/** A value in an audit line: a cleared narrowing reads as "unset". */
function auditValue(value: unknown): string {
  return value === null || value === undefined ? "unset" : formatValue(value);
}

function describeChange(entry: AuditEntry): string {
  if (entry.before === null) {
    const set = entry.after ? narrowings(entry.after) : [];
    return `created${set.length > 0 ? `: ${set.join(", ")}` : ""}`;
  }
  if (entry.after === null) return "deleted (deployment defaults apply)";
  const changes = Object.values(fieldOfFlag)
    .filter(
      (field) =>
        JSON.stringify(entry.before?.[field] ?? null) !== JSON.stringify(entry.after?.[field] ?? null),
    )
    .map((field) => `${field} ${auditValue(entry.before?.[field])} -> ${auditValue(entry.after?.[field])}`);
  return changes.length > 0 ? `updated: ${changes.join(", ")}` : "updated: no change";
}

function formatQuantity(row: UsageRow): string {
  if (row.quantity === 0) return "-";
  if (row.kind === "exec" || row.kind === "session_ended" || row.kind === "sandbox_cpu")
    return `${(row.quantity / 1000).toFixed(1)} s`;
  if (row.kind === "file_in" || row.kind === "file_out" || row.kind === "sandbox_memory_peak")
    return `${row.quantity} bytes`;
  return String(row.quantity);
}

// ---------------------------------------------------------------------------------------------
// Arguments

function workspaceArgument(value: string): string {
  if (!workspaceIdPattern.test(value)) {
    throw new InvalidArgumentError(
      `'${value}' is not a valid workspace id (letters, digits, . _ : -; 128 at most, starting with a letter or digit)`,
    );
  }
  return value;
}

function listOption(value: string): string[] {
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

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

const DURATION = /^(\d+)\s*(s|m|h|d|w)$/i;
const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `--since 24h` (s, m, h, d, w) or an ISO date: the start of the window, as an ISO string. */
function sinceOption(value: string): string {
  const duration = DURATION.exec(value.trim());
  if (duration)
    return new Date(Date.now() - Number(duration[1]) * UNIT_MS[duration[2]!.toLowerCase()]!).toISOString();
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(new Date(value).getTime()))
    return new Date(value).toISOString();
  throw new InvalidArgumentError(`expected a duration (30m, 24h, 7d) or an ISO date, got '${value}'`);
}

interface SetOptions extends ConnectionOptions {
  maxConcurrentSessions?: number;
  sessionsPerMinute?: number;
  execSecondsPerDay?: number;
  allowedTools?: string[];
  allowedImages?: string[];
  defaultImage?: string;
  execTimeoutCeiling?: number;
  idleTimeoutCeiling?: number;
  maxLifetimeCeiling?: number;
  maxFileBytes?: number;
  resourceClass?: string;
  egressAllowCidrs?: string[];
  egressAllowHosts?: string[];
  enable?: boolean;
  disable?: boolean;
  clear?: PolicyField[];
}

/** The edit `policy set` sends: only the fields given, null for each `--clear`. */
export function editOf(options: SetOptions): Record<string, unknown> {
  const edit: Record<string, unknown> = {};
  const given: [PolicyField, unknown][] = [
    ["maxConcurrentSessions", options.maxConcurrentSessions],
    ["sessionsPerMinute", options.sessionsPerMinute],
    ["execSecondsPerDay", options.execSecondsPerDay],
    ["allowedTools", options.allowedTools],
    ["allowedImages", options.allowedImages],
    ["defaultImage", options.defaultImage],
    ["execTimeoutCeilingSeconds", options.execTimeoutCeiling],
    ["idleTimeoutCeilingSeconds", options.idleTimeoutCeiling],
    ["maxLifetimeCeilingSeconds", options.maxLifetimeCeiling],
    ["maxFileBytes", options.maxFileBytes],
    ["resourceClass", options.resourceClass],
    ["egressAllowCidrs", options.egressAllowCidrs],
    ["egressAllowHosts", options.egressAllowHosts],
  ];
  for (const [field, value] of given) if (value !== undefined) edit[field] = value;
  if (options.enable && options.disable) throw new UsageError("--enable and --disable contradict each other");
  if (options.enable) edit.enabled = true;
  if (options.disable) edit.enabled = false;
  for (const field of options.clear ?? []) {
    if (field in edit) throw new UsageError(`${field} is both set and cleared`);
    edit[field] = null;
  }
  if (Object.keys(edit).length === 0)
    throw new UsageError(
      "nothing to change: give at least one field to set, --enable/--disable or --clear <field>",
    );
  return edit;
}

// ---------------------------------------------------------------------------------------------
// Commands

/** Runs an action: usage problems exit 2, refusals and unreachable gateways exit 1. */
function run<A extends unknown[]>(action: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args) => {
    try {
      await action(...args);
    } catch (error) {
      if (error instanceof UsageError) {
        process.stderr.write(`sandpool policy: ${error.message}\n(add --help for usage and examples)\n`);
        process.exitCode = POLICY_USAGE_EXIT_CODE;
        return;
      }
      if (error instanceof PolicyCliError) {
        process.stderr.write(`sandpool policy: ${error.message}\n`);
        process.exitCode = 1;
        return;
      }
      throw error;
    }
  };
}

/** Commander's own usage errors (unknown option, missing argument) exit 2, help exits 0. */
function usageExits(command: Command): Command {
  return command
    .showHelpAfterError("(add --help for usage and examples)")
    .exitOverride((error: CommanderError) => {
      process.exit(error.exitCode === 0 ? 0 : POLICY_USAGE_EXIT_CODE);
    });
}

/** The "Examples:" block after a command's help. */
export function examples(...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  ${line}\n`).join("")}`;
}

/** --url, --token and --json, on every sub-command. */
export function withConnection(command: Command): Command {
  return usageExits(
    command
      .addOption(
        new Option("--url <url>", "the gateway's URL (the admin API is at <url>/admin/v1)")
          .env("SANDPOOL_URL")
          .default(DEFAULT_URL),
      )
      .addOption(new Option("--token <token>", "an admin token").env("SANDPOOL_ADMIN_TOKEN"))
      .option("--json", "print the admin API's JSON answer as it is"),
  );
}

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
      const { body } = await call(conn, "GET", "/workspaces");
      if (conn.json) return printJson(body);
      const rows = (body as { workspaces: PolicyRow[] }).workspaces;
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
      const { body } = await call(conn, "GET", `/workspaces/${encodeURIComponent(workspace)}/policy`);
      if (conn.json) return printJson(body);
      out(renderPolicy(body as PolicyView));
    }),
  );
}

function setCommand(): Command {
  const seconds = integerOption(1);
  return withConnection(
    new Command("set")
      .summary("narrow a workspace's policy (only the fields given change)")
      .description(
        "Create or edit a workspace's policy row. Only the fields given change; --clear <field> removes " +
          "a narrowing (the deployment value applies again). A value above the deployment's ceiling is " +
          "refused, with every problem listed. The edit is audited and in force on every replica within " +
          "a second.",
      )
      .argument("<workspace>", "the workspace id", workspaceArgument)
      .option("--max-concurrent-sessions <n>", "sessions open at once", integerOption(1))
      .option("--sessions-per-minute <n>", "sessions created per minute", integerOption(1))
      .option("--exec-seconds-per-day <n>", "execution seconds per UTC day", integerOption(1))
      .option(
        "--allowed-tools <list>",
        "comma-separated tools (code_execution,bash_code_execution,...)",
        listOption,
      )
      .option("--allowed-images <list>", "comma-separated images sessions may use", listOption)
      .option("--default-image <image>", "image of a session that names none")
      .option("--exec-timeout-ceiling <s>", "ceiling of a call's timeout_seconds", seconds)
      .option("--idle-timeout-ceiling <s>", "ceiling of a session's idle timeout", seconds)
      .option("--max-lifetime-ceiling <s>", "ceiling of a session's lifetime", seconds)
      .option("--max-file-bytes <n>", "largest file a session may upload or download", integerOption(1))
      .option("--resource-class <class>", "resource class (a pool must serve it)")
      .option(
        "--egress-allow-cidrs <list>",
        "comma-separated CIDR ranges egress may reach although denied by default (within the deployment's)",
        listOption,
      )
      .option(
        "--egress-allow-hosts <list>",
        "comma-separated host names egress is limited to, exact or *.suffix (within the deployment's)",
        listOption,
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
      const { body } = await call(conn, "PUT", `/workspaces/${encodeURIComponent(workspace)}/policy`, edit);
      if (conn.json) return printJson(body);
      const view = body as PolicyView;
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
      await call(conn, "DELETE", `/workspaces/${encodeURIComponent(workspace)}/policy`);
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
      const { body } = await call(
        conn,
        "GET",
        `/workspaces/${encodeURIComponent(workspace)}/audit?limit=${options.limit}`,
      );
      if (conn.json) return printJson(body);
      const entries = (body as { entries: AuditEntry[] }).entries;
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
      const query = options.since ? `?from=${encodeURIComponent(options.since)}` : "";
      const { body } = await call(conn, "GET", `/workspaces/${encodeURIComponent(workspace)}/usage${query}`);
      if (conn.json) return printJson(body);
      const answer = body as { from: string; to: string; usage: UsageRow[] };
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
          "  sandpool policy delete team-a\n",
      )
      .addCommand(listCommand())
      .addCommand(getCommand())
      .addCommand(setCommand())
      .addCommand(deleteCommand())
      .addCommand(auditCommand())
      .addCommand(usageCommand()),
  );
}
