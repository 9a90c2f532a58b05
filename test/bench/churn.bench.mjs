/**
 * `npm run bench:churn`: Otari's session-per-request pattern on `sandpool serve` (Redis,
 * Postgres, the docker runtime, a deployment of its own), beside the Docker engine's own
 * container start rate on the same machine, in one run:
 *
 *   engine   1, 8 and 16 workers, each looping create -> start -> remove of a container of
 *            the sandbox image made from the docker runtime's spec (its hardening, no
 *            network), its command `sleep`: starts/s, the ceiling of a churn that needs a
 *            fresh container per session (lib/engine-start-rate.mjs).
 *   churn    1, 8 and 32 clients over one workspace, 8 and 32 over eight (one client uses
 *            one workspace), each looping CreateSession -> Execute `print(1)` ->
 *            DeleteSession for a fixed time (lib/churn-loop.mjs), as fast as they can (the
 *            machine saturated), and 8 clients of one workspace paced at 20 sessions/s in
 *            all (the targets' load, a client behind its schedule timed from when its cycle
 *            was due): sessions/s, CreateSession
 *            p50/p99, DeleteSession p50, the warm hit rate and the share of it that
 *            reused a sandbox of the workspace's earlier session (the gateway's
 *            sandpool_lease_duration_seconds counts by start="reused"/"warm"/"cold", read from
 *            /metrics before and after the row). Before each row the pool is back at minIdle
 *            with nothing starting.
 *
 * The deployment's policy and limits are raised so that no quota (sessions per minute,
 * concurrent sessions, the day's execution seconds, calls in flight) throttles the clients;
 * the pool keeps its defaults otherwise (warm-up concurrency, demand-driven sizing).
 * The issue's targets are printed beside the figures with PASS/FAIL: 8 clients of one
 * workspace >= 20 sessions/s, CreateSession p99 <= 50 ms, DeleteSession p50 <= 10 ms; over
 * eight workspaces >= 90% of the engine's best start rate.
 *
 *   node test/bench/churn.bench.mjs [--seconds N] [--quick] [--min-idle N] [--max-total N]
 *                                   [--rows CxW,...] [--no-engine]
 *
 * --seconds N     length of each row, engine rows included (default 25)
 * --warm-up-seconds N
 *                 unmeasured churn before each row, so its workspaces have sandboxes of their
 *                 own to reuse, as a running chat service does (default 10; 2 with --quick)
 * --quick         a smoke run: 3 s per row unless --seconds says otherwise
 * --min-idle N    the pool's minIdle (default 4)
 * --max-total N   the pool's maxTotal (default 40)
 * --rows CxW,...  only these churn rows, C clients over W workspaces (e.g. 8x1; default
 *                 1x1,8x1,8x1@20,32x1,8x8,32x8), CxW@R paced at R sessions/s in all: a
 *                 change to one case is measured in minutes
 * --no-engine     skip the engine rows (the share of the engine's rate is then not shown)
 * --control-plane-nice N
 *                 run the gateway and Redis at nice N (e.g. --control-plane-nice=-10; needs root; Redis is set
 *                 back to 0 after): the control plane first on a host it shares with the
 *                 sandboxes, as a deployment gives it with CPU shares or a priority class.
 *                 The bench's clients run at N too: they stand in for clients on other
 *                 machines, whose wait for a CPU here is not the gateway's latency.
 *                 On 2 CPUs that every sandbox's scrub and fork compete for, a gateway at
 *                 the same priority waits for the CPU at every step (docs/benchmarks.md)
 * --profile DIR   runs serve with `--cpu-prof` and writes its profile into DIR when the run ends
 *                 (open it in Chrome's DevTools, or summarise it with scripts/cpu-profile-top.mjs)
 * --sandbox-cpus LIST
 *                 run the sandboxes on these CPUs only (runtime.docker.sandboxCpus, e.g. 1)
 *                 and the gateway, Redis and the clients on the others (taskset; Redis is
 *                 given every CPU back after): the control plane on CPUs of its own, as
 *                 docs/deploying.md advises
 *
 * Needs the built CLI, Postgres (127.0.0.1:5432, db test), Redis (127.0.0.1:6379) and a
 * Docker engine with sandpool/sandbox:dev; every container, key, database and temp dir it made
 * is removed (also on errors and Ctrl-C). Exits 0 when the measurements ran, whether targets
 * pass or not. Progress goes to stderr, results to stdout.
 */

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { cpus, loadavg, setPriority } from "node:os";
import { parseArgs } from "node:util";
import { runChurn } from "./lib/churn-loop.mjs";
import { printChurnReport } from "./lib/churn-report.mjs";
import { createClient } from "./lib/client.mjs";
import { cliPath } from "./lib/dev-gateway.mjs";
import { measureEngineStartRate } from "./lib/engine-start-rate.mjs";
import { readMetrics, serverMeanMs, waitForRefill } from "./lib/gateway-metrics.mjs";
import { imagePresent } from "./lib/image-bench.mjs";
import { installCleanupHandlers, onCleanup, runBench } from "./lib/process.mjs";
import { createServeDeployment, serveBackendsAvailable } from "./lib/serve-deployment.mjs";
import { formatMs, nowMs, progress } from "./lib/timing.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url);

let values;
try {
  ({ values } = parseArgs({
    options: {
      seconds: { type: "string" },
      quick: { type: "boolean", default: false },
      "min-idle": { type: "string", default: "4" },
      "max-total": { type: "string", default: "40" },
      "warm-up-seconds": { type: "string" },
      rows: { type: "string" },
      "no-engine": { type: "boolean", default: false },
      "control-plane-nice": { type: "string" },
      "sandbox-cpus": { type: "string" },
      profile: { type: "string" },
    },
  }));
} catch (error) {
  console.error(`${error.message}: see node ${process.argv[1]} --help`);
  process.exit(2);
}
const whole = (name, min) => {
  const n = Number(values[name]);
  if (!Number.isSafeInteger(n) || n < min) {
    console.error(`--${name} must be an integer >= ${min}, got ${values[name]}`);
    process.exit(2);
  }
  return n;
};
const seconds = values.seconds === undefined ? (values.quick ? 3 : 25) : whole("seconds", 1);
const warmUpSeconds =
  values["warm-up-seconds"] === undefined ? (values.quick ? 2 : 10) : whole("warm-up-seconds", 0);
const minIdle = whole("min-idle", 0);
const controlPlaneNice =
  values["control-plane-nice"] === undefined ? undefined : Number(values["control-plane-nice"]);
if (
  controlPlaneNice !== undefined &&
  !(Number.isInteger(controlPlaneNice) && controlPlaneNice >= -20 && controlPlaneNice <= 19)
) {
  console.error(
    `--control-plane-nice must be an integer from -20 to 19, got ${values["control-plane-nice"]}`,
  );
  process.exit(2);
}
const maxTotal = whole("max-total", Math.max(1, minIdle));
const sandboxCpus = values["sandbox-cpus"];
const controlPlaneCpus = sandboxCpus === undefined ? undefined : cpusOutside(sandboxCpus);

/** The machine's CPUs not in `list` (Docker's cpuset syntax), as taskset's list; exits when none are. */
function cpusOutside(list) {
  if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(list)) {
    console.error(`--sandbox-cpus takes CPUs and ranges, e.g. 1 or 2-3, got ${list}`);
    process.exit(2);
  }
  const taken = new Set();
  for (const item of list.split(",")) {
    const [from, to = from] = item.split("-").map(Number);
    for (let cpu = from; cpu <= to; cpu++) taken.add(cpu);
  }
  const rest = cpus()
    .map((_, cpu) => cpu)
    .filter((cpu) => !taken.has(cpu));
  if (rest.length === 0 || rest.length === cpus().length) {
    console.error(`--sandbox-cpus ${list} must leave some of the ${cpus().length} CPUs, and take some`);
    process.exit(2);
  }
  return rest.join(",");
}

const IMAGE = "sandpool/sandbox:dev";
const ENGINE_PARALLEL = [1, 8, 16];
/**
 * [clients, workspaces, offered sessions/s or undefined for a closed loop]: one client over
 * eight workspaces would use one, as 1 x 1 does. The paced row is the targets' load (20
 * sessions/s from eight clients), the closed ones the machine's saturation.
 */
const ALL_ROWS = [
  [1, 1],
  [8, 1],
  [8, 1, 20],
  [32, 1],
  [8, 8],
  [32, 8],
];
const ROWS = values.rows === undefined ? ALL_ROWS : parseRows(values.rows);
const WORKSPACES = Math.max(...ROWS.map(([, workspaces]) => workspaces));

function parseRows(text) {
  return text.split(",").map((item) => {
    const match = /^(\d+)x(\d+)(?:@(\d+(?:\.\d+)?))?$/.exec(item.trim());
    if (
      !match ||
      Number(match[1]) < 1 ||
      Number(match[2]) < 1 ||
      (match[3] !== undefined && !(Number(match[3]) > 0))
    ) {
      console.error(
        `--rows takes CxW items (clients x workspaces, each >= 1), or CxW@R paced at R sessions/s in all (R > 0), got ${item}`,
      );
      process.exit(2);
    }
    return [Number(match[1]), Number(match[2]), match[3] === undefined ? undefined : Number(match[3])];
  });
}
/** After the pool is back at minIdle: destroyed sandboxes' removals settle too. */
const ROW_SETTLE_MS = 1_000;
/** High enough that no quota is what the bench measures. */
const UNTHROTTLED = 1_000_000;
const COLD_START_TIMEOUT_MS = 60_000;
/**
 * A lease may wait up to the cold-start deadline for a place and then start a sandbox, which
 * may take as long again: no CreateSession is given up on before the gateway gives up.
 */
const CALL_TIMEOUT_MS = 2 * COLD_START_TIMEOUT_MS + 10_000;
const METRICS_TOKEN = `bench-churn-${randomBytes(24).toString("hex")}`;

const CONFIG = `
pools:
  - name: default
    image: ${IMAGE}
    minIdle: ${minIdle}
    maxTotal: ${maxTotal}
    coldStartTimeoutMs: ${COLD_START_TIMEOUT_MS}
policy:
  maxConcurrentSessions: ${UNTHROTTLED}
  sessionsPerMinute: ${UNTHROTTLED}
  execSecondsPerDay: ${UNTHROTTLED}
limits:
  maxCallsInFlightPerWorkspace: ${UNTHROTTLED}${
    sandboxCpus === undefined
      ? ""
      : `
runtime:
  docker:
    sandboxCpus: "${sandboxCpus}"`
  }
metrics:
  token: ${METRICS_TOKEN}
`;

/** The local Redis server's processes (the bench's Redis is 127.0.0.1:6379). */
function controlPlanePids() {
  const found = spawnSync("pgrep", ["-x", "redis-server"], { encoding: "utf8" });
  return found.stdout.split("\n").filter(Boolean).map(Number);
}

/** Every thread of `pid` onto `list` (taskset's syntax). */
function pinToCpus(pid, list) {
  const pinned = spawnSync("taskset", ["-a", "-p", "-c", list, String(pid)], { encoding: "utf8" });
  if (pinned.status !== 0) throw new Error(`taskset ${list} ${pid} failed: ${pinned.stderr || pinned.error}`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const formatLoad = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

async function main() {
  installCleanupHandlers();
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first`);
  if (!imagePresent(IMAGE)) throw new Error(`the Docker engine lacks ${IMAGE} (npm run build:sandbox-image)`);
  if (!(await serveBackendsAvailable()))
    throw new Error("needs Postgres (127.0.0.1:5432, db test) and Redis (127.0.0.1:6379)");
  const machine = { cpus: cpus().length, loadStart: formatLoad() };
  const durationMs = seconds * 1000;

  // The engine first, on a machine without the gateway's pool.
  const engine = [];
  for (const parallel of values["no-engine"] ? [] : ENGINE_PARALLEL) {
    const measured = await measureEngineStartRate(IMAGE, { parallel, durationMs });
    progress(`engine, ${parallel} in parallel: ${measured.perSecond.toFixed(1)} starts/s`);
    engine.push(measured);
  }

  const deployment = await createServeDeployment(CONFIG);
  const unregister = onCleanup(() => deployment.close());
  await deployment.migrate();
  const started = nowMs();
  // A CPU profile of serve (--cpu-prof, written when it stops): where a session's gateway work goes.
  const gateway = values.profile
    ? await deployment.startGateway(undefined, {}, [
        "--cpu-prof",
        "--cpu-prof-interval=200",
        `--cpu-prof-dir=${values.profile}`,
      ])
    : await deployment.startServe();
  progress(`serve ready in ${formatMs(nowMs() - started)} at ${gateway.url}`);
  if (controlPlaneNice !== undefined) {
    const redisPids = controlPlanePids();
    setPriority(gateway.pid, controlPlaneNice);
    setPriority(process.pid, controlPlaneNice);
    for (const pid of redisPids) setPriority(pid, controlPlaneNice);
    onCleanup(async () => {
      for (const pid of redisPids) setPriority(pid, 0);
    });
    machine.controlPlaneNice = controlPlaneNice;
    progress(`the gateway, Redis (${redisPids.join(", ")}) and the clients run at nice ${controlPlaneNice}`);
  }
  if (controlPlaneCpus !== undefined) {
    const redisPids = controlPlanePids();
    for (const pid of [gateway.pid, process.pid, ...redisPids]) pinToCpus(pid, controlPlaneCpus);
    onCleanup(async () => {
      for (const pid of redisPids) pinToCpus(pid, `0-${cpus().length - 1}`);
    });
    machine.sandboxCpus = sandboxCpus;
    progress(`sandboxes on CPUs ${sandboxCpus}; the gateway, Redis and the clients on ${controlPlaneCpus}`);
  }
  const tokens = await Promise.all(
    Array.from({ length: WORKSPACES }, (_, i) => deployment.token(`churn-${i}`)),
  );
  const metrics = createClient(gateway.url, METRICS_TOKEN);
  const rows = [];
  try {
    for (const [clients, workspaces, ratePerSecond] of ROWS) {
      await waitForRefill(metrics, minIdle);
      // Unmeasured: the row's clients first run until their workspaces have sandboxes of their
      // own (the steady state of a chat service; the first session of each costs a start).
      if (warmUpSeconds > 0) {
        await runChurn(gateway.url, tokens.slice(0, workspaces), {
          clients,
          durationMs: warmUpSeconds * 1000,
          callTimeoutMs: CALL_TIMEOUT_MS,
          ratePerSecond,
        });
      }
      await sleep(ROW_SETTLE_MS);
      const before = await readMetrics(metrics);
      const result = await runChurn(gateway.url, tokens.slice(0, workspaces), {
        clients,
        durationMs,
        callTimeoutMs: CALL_TIMEOUT_MS,
        ratePerSecond,
      });
      const after = await readMetrics(metrics);
      const warm = after.warmLeases - before.warmLeases;
      const reused = after.reusedLeases - before.reusedLeases;
      const cold = after.coldLeases - before.coldLeases;
      const leases = warm + reused + cold;
      rows.push({
        workspaces,
        ratePerSecond,
        result,
        warmHit: (warm + reused) / leases,
        reusedShare: reused / leases,
      });
      // Where the gateway's CreateSession time went (means, server side): the lease, by how.
      const mean = (count, seconds) => formatMs(serverMeanMs(before, after, count, seconds));
      const creates = after.createCount - before.createCount;
      const slowCreates = creates - (after.createWithin50ms - before.createWithin50ms);
      progress(
        `${clients} clients / ${workspaces} workspaces${ratePerSecond === undefined ? "" : ` at ${ratePerSecond}/s offered`}: ${result.perSecond.toFixed(1)} sessions/s, ` +
          `${reused} reused / ${warm} warm / ${cold} cold leases; server means: CreateSession ` +
          `${mean("createCount", "createSeconds")} (${((100 * slowCreates) / Math.max(1, creates)).toFixed(1)}% over 50 ms), ` +
          `DeleteSession ${mean("deleteCount", "deleteSeconds")}, leases reused ${mean("reusedLeases", "reusedLeaseSeconds")} ` +
          `warm ${mean("warmLeases", "warmLeaseSeconds")} cold ${mean("coldLeases", "coldLeaseSeconds")}, ` +
          `Execute ${mean("execCount", "execSeconds")}`,
      );
    }
    machine.loadEnd = formatLoad();
    // Printed before the clean-up, whose failure must not cost the figures.
    printChurnReport({ engine, rows, seconds, warmUpSeconds, pool: { minIdle, maxTotal }, machine });
  } finally {
    await metrics.close();
    unregister();
    await deployment.close();
  }
}

await runBench(main);
