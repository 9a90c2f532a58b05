/**
 * `sandpool pools`: operators see every pool (sizes in force and as configured, the effective
 * minIdle demand raises it to, what it holds now, the deployment's warm-up failures and warm
 * hit rate, and why a failing pool's starts fail) and resize one without a restart, through the
 * gateway's admin API. A resize is validated by the gateway, persisted, audited and in force
 * on every replica within a second. Exit codes: 0 done, 1 refused or unreachable, 2 bad usage.
 */
import { Command, InvalidArgumentError } from "commander";
import {
  type AdminBody,
  AdminUsageError,
  adminCall,
  adminConnection,
  type ConnectionOptions,
} from "../admin/admin-client.js";
import { examples, runAdmin, usageExits, withConnection } from "../admin/admin-command-kit.js";
import { out, printJson, table } from "../admin/admin-render.js";

const PREFIX = "sandpool pools";
/** As the gateway checks it (src/pool/pool-sizes.ts MAX_POOL_SIZE); the gateway has the last word. */
const MAX_POOL_SIZE = 1_000;

/** A pool as the admin API answers it: the type generated from its OpenAPI document. */
type Pool = AdminBody<"get", "/admin/v1/pools">["items"][number];

/** What the table reads of a pool; an older gateway does not send the effective minimum, parked sandboxes nor engine starts. */
type PoolItem = Pick<
  Pool,
  | "name"
  | "image"
  | "resourceClass"
  | "minIdle"
  | "maxTotal"
  | "configured"
  | "idle"
  | "leased"
  | "starting"
  | "warmupFailures"
  | "warmHitRate"
> &
  Partial<Pick<Pool, "effectiveMinIdle" | "parked" | "lastStartError">> & {
    engineStarts?: Pick<Pool["engineStarts"], "startsPerSecond">;
  };

/**
 * A size: a whole number, or `default` for the configured value (sent as null; commander
 * turns a parser's null into "", so the word itself travels to the action).
 */
function sizeOption(min: number) {
  return (value: string): number | "default" => {
    if (value === "default") return value;
    if (!/^\d+$/.test(value))
      throw new InvalidArgumentError(`expected a whole number or 'default', got '${value}'`);
    const parsed = Number(value);
    if (parsed < min || parsed > MAX_POOL_SIZE)
      throw new InvalidArgumentError(`expected a number from ${min} to ${MAX_POOL_SIZE}, or 'default'`);
    return parsed;
  };
}

/** "2 (3)": the size in force, and the configured one when it differs. */
function size(inForce: number, configured: number): string {
  return inForce === configured ? String(inForce) : `${inForce} (${configured})`;
}

function rate(value: number | null): string {
  return value === null ? "-" : `${Math.round(value * 100)}%`;
}

function startsPerSecond(value: number | null): string {
  return value === null ? "-" : value.toFixed(1);
}

export function renderPools(pools: PoolItem[]): string {
  const rows = table(
    [
      "POOL",
      "IMAGE",
      "CLASS",
      "MIN IDLE",
      "EFFECTIVE",
      "MAX TOTAL",
      "IDLE",
      "PARKED",
      "LEASED",
      "STARTING",
      "FAILURES",
      "WARM HITS",
      "STARTS/S",
    ],
    pools.map((pool) => [
      pool.name,
      pool.image,
      pool.resourceClass,
      size(pool.minIdle, pool.configured.minIdle),
      String(pool.effectiveMinIdle ?? pool.minIdle),
      size(pool.maxTotal, pool.configured.maxTotal),
      String(pool.idle),
      String(pool.parked ?? 0),
      String(pool.leased),
      String(pool.starting),
      String(pool.warmupFailures),
      rate(pool.warmHitRate),
      startsPerSecond(pool.engineStarts?.startsPerSecond ?? null),
    ]),
  );
  const failing = pools.flatMap((pool) =>
    pool.lastStartError
      ? [
          `${pool.name}: starts failing (${pool.lastStartError.consecutiveFailures} in a row, last at ` +
            `${pool.lastStartError.at}; next attempt at ${pool.lastStartError.nextAttemptAt}): ` +
            pool.lastStartError.message,
        ]
      : [],
  );
  return failing.length === 0 ? rows : `${rows}\n\n${failing.join("\n")}`;
}

const FOOTNOTE =
  "\nSizes in force; the configured one in parentheses where a resize changed it. EFFECTIVE is " +
  "what warm-up keeps idle: MIN IDLE raised by demand (lease rate x p95 refill time), up to MAX TOTAL. " +
  "Failures and warm hits are the deployment's, every replica's leases and starts counted.";

/** The answering replica's last hour (the admin API says whose: this replica's, not the deployment's). */
function serverErrorsLine(minutes: { calls: number; serverErrors: number; sandboxErrors: number }[]): string {
  const sum = (field: "calls" | "serverErrors" | "sandboxErrors") =>
    minutes.reduce((total, minute) => total + minute[field], 0);
  return (
    `\nThis replica, last hour: ${sum("calls")} contract calls, ${sum("serverErrors")} server errors (5xx), ` +
    `${sum("sandboxErrors")} of them sandbox failures (502/504). Other replicas count their own.`
  );
}

function listCommand(): Command {
  return withConnection(
    new Command("list")
      .summary("show every pool: sizes, effective minimum, what it holds now, failures, warm hit rate")
      .description(
        "Show every pool: its sizes in force (and as configured, where a resize changed them), the " +
          "effective minIdle the deployment's demand raises it to, its idle, leased and starting " +
          "sandboxes across replicas, the deployment's warm-up failures and share of sessions served " +
          "warm, and, for a pool whose starts fail, the reason and when warm-up tries again.",
      )
      .addHelpText("after", examples("sandpool pools list", "sandpool pools list --json")),
  ).action(
    runAdmin(PREFIX, async (options: ConnectionOptions) => {
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "get", "/admin/v1/pools");
      if (conn.json) return printJson(body);
      out(renderPools(body.items));
      out(serverErrorsLine(body.serverErrors.minutes));
      out(FOOTNOTE);
    }),
  );
}

type ResizeOptions = ConnectionOptions & { minIdle?: number | "default"; maxTotal?: number | "default" };

const sizeEdit = (value: number | "default") => (value === "default" ? null : value);

function resizeCommand(): Command {
  return withConnection(
    new Command("resize")
      .summary("change a pool's minIdle and/or maxTotal without a restart")
      .description(
        "Change a pool's minIdle (sandboxes kept warm) and/or maxTotal (cap across replicas). The " +
          "gateway refuses minIdle above maxTotal and sizes above 1000; the change is persisted, " +
          "audited, and in force on every replica within a second. `default` puts a size back to " +
          "its configured value. Shrinking never ends a session.",
      )
      .argument("<name>", "the pool's name")
      .option("--min-idle <n>", "sandboxes kept started and waiting (0..1000, or default)", sizeOption(0))
      .option(
        "--max-total <n>",
        "most sandboxes of the pool across replicas (1..1000, or default)",
        sizeOption(1),
      )
      .addHelpText(
        "after",
        examples(
          "sandpool pools resize default --min-idle 5",
          "sandpool pools resize default --min-idle 5 --max-total 40",
          "sandpool pools resize default --min-idle default --max-total default",
        ),
      ),
  ).action(
    runAdmin(PREFIX, async (name: string, options: ResizeOptions) => {
      const edit: Record<string, number | null> = {};
      if (options.minIdle !== undefined) edit.minIdle = sizeEdit(options.minIdle);
      if (options.maxTotal !== undefined) edit.maxTotal = sizeEdit(options.maxTotal);
      if (Object.keys(edit).length === 0) throw new AdminUsageError("give --min-idle, --max-total or both");
      const conn = adminConnection(options);
      const { body } = await adminCall(conn, "patch", "/admin/v1/pools/{name}", {
        path: { name },
        body: edit,
      });
      if (conn.json) return printJson(body);
      const pool = body;
      out(`resized the ${pool.name} pool: minIdle ${pool.minIdle}, maxTotal ${pool.maxTotal}\n`);
      out(renderPools([pool]));
    }),
  );
}

export function poolsCommand(): Command {
  return usageExits(
    new Command("pools")
      .summary("show and resize pools through the admin API")
      .description(
        "Show pools and resize them at run time through the gateway's admin API (/admin/v1), with an " +
          "admin token.\n\n" +
          "Every sub-command takes --url (env SANDPOOL_URL, default http://127.0.0.1:8080), --token " +
          "(env SANDPOOL_ADMIN_TOKEN; `sandpool dev` prints one) and --json (the raw answer).\n\n" +
          "Exit codes: 0 done, 1 refused by the gateway or unreachable, 2 bad usage.",
      )
      .addCommand(listCommand())
      .addCommand(resizeCommand()),
  );
}
