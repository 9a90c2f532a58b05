/**
 * bench:churn's report: the engine's start rate, one row per churn measurement, and the
 * issue's targets beside the figures they judge (PASS/FAIL).
 */
import { percentile } from "./stats.mjs";
import { checkAtLeast, checkAtMost, heading, printTable } from "./table.mjs";
import { formatMs } from "./timing.mjs";

const SESSIONS_PER_SECOND = 20;
const CREATE_P99_MS = 50;
const DELETE_P50_MS = 10;
/** Over eight workspaces, sessions/s against the engine's best start rate. */
const ENGINE_SHARE_PERCENT = 90;

const rate = (perSecond) => (Number.isFinite(perSecond) ? perSecond.toFixed(1) : "-");
const percent = (share) => (Number.isFinite(share) ? `${(share * 100).toFixed(0)}%` : "-");

function failuresOf(result) {
  const kinds = [...result.failures].map(([kind, { count }]) => `${count} ${kind}`);
  return kinds.length > 0 ? kinds.join(", ") : "0";
}

export function printChurnReport({ engine, rows, seconds, warmUpSeconds, pool, machine }) {
  process.stdout.write(
    `bench:churn on ${machine.cpus} CPUs (load ${machine.loadStart} -> ${machine.loadEnd}), ` +
      `${seconds} s per row after ${warmUpSeconds} s unmeasured, pool minIdle ${pool.minIdle} maxTotal ${pool.maxTotal}` +
      `${machine.controlPlaneNice === undefined ? "" : `, the gateway, Redis and clients at nice ${machine.controlPlaneNice}`}` +
      `${machine.sandboxCpus === undefined ? "" : `, sandboxes on CPUs ${machine.sandboxCpus} and the rest on the others`}\n`,
  );

  heading("the engine: create + start + remove of a sandbox-spec container (sleep), in parallel");
  printTable(
    ["parallel", "starts", "starts/s", "create+start p50", "remove p50"],
    engine.map((e) => [e.parallel, e.starts, rate(e.perSecond), formatMs(e.startMs), formatMs(e.removeMs)]),
  );
  // Without engine rows (--no-engine) the shares are not shown.
  const engineBest = engine.length > 0 ? Math.max(...engine.map((e) => e.perSecond)) : Number.NaN;

  heading("sandpool serve: CreateSession -> Execute print(1) -> DeleteSession per client, in a loop");
  printTable(
    [
      "clients",
      "workspaces",
      "offered/s",
      "sessions",
      "sessions/s",
      "of engine",
      "Create p50",
      "Create p99",
      "Delete p50",
      "warm hit",
      "reused",
      "failures",
    ],
    rows.map(({ result, ratePerSecond, warmHit, reusedShare }) => [
      result.clients,
      result.workspaces,
      ratePerSecond === undefined ? "as fast" : ratePerSecond,
      result.sessions,
      rate(result.perSecond),
      percent(result.perSecond / engineBest),
      formatMs(percentile(result.creates, 50)),
      formatMs(percentile(result.creates, 99)),
      formatMs(percentile(result.deletes, 50)),
      percent(warmHit),
      percent(reusedShare),
      failuresOf(result),
    ]),
  );
  for (const { result } of rows) {
    for (const [kind, { example }] of result.failures) {
      if (kind.endsWith(example)) continue; // a transport error says all in its kind
      process.stdout.write(`  ${result.clients} clients / ${result.workspaces} ws, ${kind}: ${example}\n`);
    }
  }

  heading("targets");
  const row = (clients, workspaces, ratePerSecond) =>
    rows.find(
      (r) => r.result.clients === clients && r.workspaces === workspaces && r.ratePerSecond === ratePerSecond,
    )?.result;
  const targets = [];
  // The eight clients of one workspace as fast as they go (the machine saturated), then paced
  // at the targets' rate: the latencies of each load.
  for (const [ratePerSecond, load] of [
    [undefined, "as fast as they go"],
    [SESSIONS_PER_SECOND, `at ${SESSIONS_PER_SECOND} sessions/s offered`],
  ]) {
    const one = row(8, 1, ratePerSecond);
    if (!one) continue;
    const create99 = percentile(one.creates, 99);
    const delete50 = percentile(one.deletes, 50);
    const label = `8 clients, 1 workspace, ${load}`;
    targets.push(
      [`${label}: sessions/s`, rate(one.perSecond), checkAtLeast(one.perSecond, SESSIONS_PER_SECOND)],
      [`${label}: CreateSession p99`, formatMs(create99), checkAtMost(create99, CREATE_P99_MS, " ms")],
      [`${label}: DeleteSession p50`, formatMs(delete50), checkAtMost(delete50, DELETE_P50_MS, " ms")],
    );
  }
  for (const clients of [8, 32]) {
    const eight = row(clients, 8, undefined);
    if (!eight || engine.length === 0) continue;
    const share = eight.perSecond / engineBest;
    targets.push([
      `${clients} clients, 8 workspaces: sessions/s of the engine's best (${rate(engineBest)}/s)`,
      percent(share),
      checkAtLeast(share * 100, ENGINE_SHARE_PERCENT, "%"),
    ]);
  }
  printTable(
    ["target", "figure", "limit", "result"],
    targets.map(([label, figure, check]) => [label, figure, check.label, check.verdict]),
  );
}
