/**
 * `npm run bench:tti`: time to interactive, as public sandbox benchmarks measure it: from a
 * CreateSession request to the answer of the session's first command (bash `echo hello`),
 * each session held until its mode ends. Modes, each on a workspace of its own that has no
 * sandbox parked (a "fresh" workspace):
 *
 *   sequential   20 sessions one after the other
 *   staggered    50 sessions, a new one every 100 ms (10/s)
 *   burst        100 sessions at once
 *   burst again  100 sessions at once on the burst's workspace, its sandboxes parked
 *
 * through `sandpool serve` (--role all) and through an edge routing to one node (each its own
 * deployment on the same Docker engine, one after the other), beside the engine's own
 * container start rate in the same run (lib/engine-start-rate.mjs, 8 in parallel): the
 * ceiling of any mode that needs a fresh container per session. Prints median / p99 / max and
 * errors per mode, with the issue's targets beside them.
 *
 *   node test/bench/tti.bench.mjs [--paths serve,edge] [--modes sequential,...] [--burst N]
 *                                 [--min-idle N] [--max-total N] [--defaults] [--no-engine]
 *
 * --paths LIST    serve, edge or both (default serve,edge)
 * --modes LIST    sequential, staggered, burst, again (default all; again needs burst)
 * --burst N       sessions per burst (default 100)
 * --min-idle N    the pool's minIdle (default: the deployment default)
 * --max-total N   the pool's maxTotal (default: the deployment default)
 * --defaults      the deployment's defaults for policy and limits too (else quotas are
 *                 raised so that none throttles the modes): what a new operator gets
 * --no-engine     skip the engine's start rate
 * --profile DIR   runs serve (and an edge's node) with `--cpu-prof`, writing the profiles into
 *                 DIR as they stop (summarise them with scripts/cpu-profile-top.mjs)
 *
 * Needs the built CLI, Postgres (127.0.0.1:5432, db test), Redis (127.0.0.1:6379) and a Docker
 * engine with sandpool/sandbox:dev; every container, key and database it made is removed.
 * Progress goes to stderr, results to stdout. Exits 0 when the measurements ran.
 */

import { parseArgs } from "node:util";
import { createClient, freePort } from "./lib/client.mjs";
import { measureEngineStartRate } from "./lib/engine-start-rate.mjs";
import { imagePresent } from "./lib/image-bench.mjs";
import { installCleanupHandlers, onCleanup, runBench } from "./lib/process.mjs";
import { createServeDeployment, serveBackendsAvailable } from "./lib/serve-deployment.mjs";
import { heading, printTable } from "./lib/table.mjs";
import { formatMs, progress } from "./lib/timing.mjs";
import { runTtiMode, TTI_MODES, TTI_TARGETS } from "./lib/tti-modes.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url);

let values;
try {
  ({ values } = parseArgs({
    options: {
      paths: { type: "string", default: "serve,edge" },
      modes: { type: "string", default: TTI_MODES.join(",") },
      burst: { type: "string", default: "100" },
      "min-idle": { type: "string" },
      "max-total": { type: "string" },
      defaults: { type: "boolean", default: false },
      "no-engine": { type: "boolean", default: false },
      profile: { type: "string" },
    },
  }));
} catch (error) {
  console.error(`${error.message}: see node ${process.argv[1]} --help`);
  process.exit(2);
}

function fail(message) {
  console.error(`${message}: see node ${process.argv[1]} --help`);
  process.exit(2);
}
function listOf(name, allowed) {
  const items = values[name].split(",").map((item) => item.trim());
  const unknown = items.filter((item) => !allowed.includes(item));
  if (unknown.length > 0 || items.length === 0)
    fail(`--${name} takes ${allowed.join(", ")}; got ${values[name]}`);
  return items;
}
function whole(name, min) {
  if (values[name] === undefined) return undefined;
  const n = Number(values[name]);
  if (!Number.isSafeInteger(n) || n < min)
    fail(`--${name} must be an integer >= ${min}, got ${values[name]}`);
  return n;
}

const PATHS = listOf("paths", ["serve", "edge"]);
const MODES = listOf("modes", TTI_MODES);
if (MODES.includes("again") && !MODES.includes("burst")) fail("--modes again needs burst before it");
const BURST = whole("burst", 1);
const MIN_IDLE = whole("min-idle", 0);
const MAX_TOTAL = whole("max-total", 1);
const IMAGE = "sandpool/sandbox:dev";
const NODE_SECRET = "bench-tti-node-secret-0123456789-abcdefghij";
const UNTHROTTLED = 1_000_000;
/** Node's flags for a gateway: a CPU profile written into --profile's directory when it stops. */
const PROFILED = values.profile
  ? ["--cpu-prof", "--cpu-prof-interval=200", `--cpu-prof-dir=${values.profile}`]
  : [];

function config() {
  const pool = [
    "pools:",
    "  - name: default",
    `    image: ${IMAGE}`,
    ...(MIN_IDLE === undefined ? [] : [`    minIdle: ${MIN_IDLE}`]),
    ...(MAX_TOTAL === undefined ? [] : [`    maxTotal: ${MAX_TOTAL}`]),
    "node:",
    "  heartbeatMs: 500",
  ];
  const unthrottled = [
    "policy:",
    `  maxConcurrentSessions: ${UNTHROTTLED}`,
    `  sessionsPerMinute: ${UNTHROTTLED}`,
    "limits:",
    `  maxCallsInFlightPerWorkspace: ${UNTHROTTLED}`,
  ];
  return [...pool, ...(values.defaults ? [] : unthrottled), ""].join("\n");
}

/** `serve` or `edge`: a deployment of its own and the URL its clients call. */
async function startPath(name) {
  const deployment = await createServeDeployment(config());
  const unregister = onCleanup(() => deployment.close());
  await deployment.migrate();
  let url;
  let logs;
  if (name === "serve") {
    const gateway = await deployment.startGateway(undefined, {}, PROFILED);
    url = gateway.url;
    logs = () => gateway.log();
  } else {
    const port = await freePort();
    const node = await deployment.startGateway(
      undefined,
      {
        SANDPOOL_ROLE: "node",
        SANDPOOL_NODE_SECRETS: NODE_SECRET,
        SANDPOOL_NODE_ID: "bench-tti-node",
        SANDPOOL_NODE_HOST: "127.0.0.1",
        SANDPOOL_NODE_PORT: String(port),
        SANDPOOL_NODE_ADVERTISE_URL: `http://127.0.0.1:${port}`,
      },
      PROFILED,
    );
    const edge = await deployment.startGateway(undefined, {
      SANDPOOL_ROLE: "edge",
      SANDPOOL_NODE_SECRETS: NODE_SECRET,
    });
    url = edge.url;
    logs = () => `edge:\n${edge.log()}\nnode:\n${node.log()}`;
  }
  return {
    deployment,
    url,
    logs,
    close: async () => {
      unregister();
      await deployment.close();
    },
  };
}

async function main() {
  installCleanupHandlers();
  if (!imagePresent(IMAGE)) throw new Error(`the Docker engine lacks ${IMAGE} (npm run build:sandbox-image)`);
  if (!(await serveBackendsAvailable()))
    throw new Error("needs Postgres (127.0.0.1:5432, db test) and Redis (127.0.0.1:6379)");
  let engine;
  if (!values["no-engine"]) {
    engine = await measureEngineStartRate(IMAGE, { parallel: 8, durationMs: 10_000 });
    progress(`engine, 8 in parallel: ${engine.perSecond.toFixed(1)} starts/s`);
  }
  const rows = [];
  for (const pathName of PATHS) {
    const path = await startPath(pathName);
    progress(`${pathName}: ready at ${path.url}`);
    try {
      const admin = createClient(path.url, await path.deployment.adminToken());
      for (const mode of MODES) {
        // Each mode but `again` on a workspace with nothing parked; `again` reuses the burst's.
        const workspace = `tti-${mode === "again" ? "burst" : mode}`;
        const token = await path.deployment.token(workspace);
        const result = await runTtiMode(mode, { url: path.url, token, admin, workspace, burst: BURST });
        progress(
          `${pathName} ${mode}: median ${formatMs(result.stats.median)}, p99 ${formatMs(result.stats.p99)}, ` +
            `${result.errors.length} errors${result.errors.length ? ` (first: ${result.errors[0]})` : ""}`,
        );
        if (result.errors.length > 0)
          progress(
            `${pathName} ${mode}: the gateway log, but for failed requests:\n${path
              .logs()
              .split("\n")
              .filter((line) => !line.includes(`"request failed"`))
              .join("\n")
              .slice(-4000)}`,
          );
        rows.push({ path: pathName, mode, ...result });
      }
      await admin.close();
    } finally {
      await path.close();
    }
  }
  heading("Time to interactive: CreateSession -> first `echo hello` answered, ms");
  printTable(
    ["path", "mode", "n", "median", "p99", "max", "errors", "target p99", "result"],
    rows.map((row) => {
      const target = TTI_TARGETS[row.mode];
      const pass = row.errors.length === 0 && row.stats.p99 <= target;
      return [
        row.path,
        row.label,
        row.stats.n,
        formatMs(row.stats.median),
        formatMs(row.stats.p99),
        formatMs(row.stats.max),
        row.errors.length,
        `<= ${target} ms`,
        pass ? "PASS" : "FAIL",
      ];
    }),
  );
  if (engine) {
    process.stdout.write(
      `\nbaseline: the engine starts ${engine.perSecond.toFixed(1)} containers/s (8 in parallel, ` +
        `create + start p50 ${formatMs(engine.startMs)}): a burst of ${BURST} fresh containers takes ` +
        `at least ${formatMs((1000 * BURST) / engine.perSecond)} here\n`,
    );
  }
}

await runBench(main);
