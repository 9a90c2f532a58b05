/**
 * `npm run bench:lease`: what the gateway costs on the production path, side by side with
 * dev mode and two baselines, all in one run on loopback (the modules under lib/ do each
 * part):
 *
 *   serve        `sandpool serve` with Redis, Postgres (a fresh database and key prefix) and
 *                the docker runtime: warm leases on a full, quiet pool; warm leases while the
 *                pool refills (one create every REFILL_SPACING_MS, each destroyed at once, so
 *                replacement containers start meanwhile); cold leases (min_idle 0).
 *   dev          `sandpool dev` (PGlite, memory store, process runtime): warm single leases,
 *                bursts, cold leases; its RSS at rest (gateway + PGlite host).
 *   exec         `print(1)` straight to a `sandpool sandbox` server, through a relay with no
 *                logic to it (lib/bare-relay.mjs: what one more process on the path costs),
 *                through serve and through dev: latency one call at a time across the paths
 *                in a new order every round, and throughput with 8 concurrent clients.
 *                And the CPU each path's process spends per exec (read from /proc: on a
 *                loaded machine wall time is mostly waiting for a CPU, CPU time is not), one
 *                call at a time and with 8 clients: the gateway's own beside the relay's.
 *   memory       serve's gateway (Redis, Postgres) with a light runtime used only here
 *                (lib/light-gateway.mjs): its RSS at rest and holding 1,000 leased sessions.
 *
 * The targets are printed beside the figures with PASS/FAIL. `--json` prints the
 * figures as one JSON object instead (run the script itself: `npm run` and the build print
 * on stdout too); `--quick` runs fewer iterations (a smoke run). Needs the
 * built CLI, Postgres (127.0.0.1:5432, db test), Redis (127.0.0.1:6379) and a Docker engine
 * with sandpool/sandbox:dev. Bounded loops; every child, container, key, database and temp dir
 * it made is removed (also on errors and Ctrl-C). Exits 0 when the measurements ran, whether
 * targets pass or not; 1 when something failed. Progress goes to stderr, results to stdout.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { createClient } from "./lib/client.mjs";
import { cliPath, mintDevTokens, startDev } from "./lib/dev-gateway.mjs";
import { measureExecCpu } from "./lib/exec-cpu.mjs";
import { measureExecLatency, measureThroughput } from "./lib/exec-measures.mjs";
import { measureHoldingSessions } from "./lib/holding-sessions.mjs";
import { measureCold, measureWarm } from "./lib/lease-measures.mjs";
import { buildFigures, printReport } from "./lib/lease-report.mjs";
import { installCleanupHandlers, makeTempDir, resolvePython, runBench } from "./lib/process.mjs";
import { startRelay } from "./lib/relay-process.mjs";
import { startSandboxContainers } from "./lib/sandbox-container.mjs";
import { startSandboxServer } from "./lib/sandbox-server.mjs";
import { serveBackendsAvailable } from "./lib/serve-deployment.mjs";
import { measureServeCold, measureServeLeases, openServe, SERVE_MIN_IDLE } from "./lib/serve-phases.mjs";
import { formatMs, progress } from "./lib/timing.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url, ["--json", "--quick"]);

const json = process.argv.includes("--json");
const quick = process.argv.includes("--quick");
const scale = (n) => (quick ? Math.max(2, Math.ceil(n / 5)) : n);

const DEV_MIN_IDLE = 8;
const DEV_MAX_TOTAL = 24;
const DEV_WARM_LEASES = scale(100);
const DEV_BURST = 4;
const DEV_BURST_ROUNDS = scale(10);
const DEV_COLD_LEASES = scale(15);
const SERVE_WARM_LEASES = scale(30);
// Enough for a p99 that is not the maximum: of 60 leases it was the largest two, interpolated.
const SERVE_REFILL_LEASES = scale(200);
const SERVE_COLD_LEASES = scale(5);
const REFILL_SPACING_MS = 300;
/**
 * Calls per path before its exec latency is measured: a gateway serves for days, so its code
 * is measured hot (the JIT's optimised tiers), as the relay's is; a few dozen calls would
 * measure the gateway's larger code half-compiled.
 */
const EXEC_WARMUP = scale(2_500);
const EXEC_CALLS = scale(300);
const THROUGHPUT_CLIENTS = 8;
/**
 * Short windows, many rounds: the machine's speed drifts within seconds (a neighbour's load),
 * and paths timed close together, in alternating order, share the drift alike.
 */
const THROUGHPUT_MS = 1_000;
const THROUGHPUT_ROUNDS = quick ? 3 : 9;
/** Calls each throughput client makes first: its sandbox server's code hot (exec-measures.mjs). */
const THROUGHPUT_WARMUP = scale(3_000);
const EXEC_CPU_CALLS = quick ? 300 : 1_500;
const HOLD_SESSIONS = 1_000;
const HOLD_WORKSPACES = 20;
const WORKSPACES = 4;
const REST_SETTLE_MS = 5_000;

const FIRST_START_TIMEOUT_MS = 120_000;
const START_TIMEOUT_MS = 60_000;
const SANDBOX_IMAGE = "sandpool/sandbox:dev";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const formatLoad = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

function assertReady() {
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first`);
  try {
    execFileSync("docker", ["image", "inspect", SANDBOX_IMAGE], { stdio: "ignore", timeout: 10_000 });
  } catch {
    throw new Error(`the Docker engine lacks ${SANDBOX_IMAGE} (npm run build:sandbox-image)`);
  }
}

async function main() {
  installCleanupHandlers();
  assertReady();
  if (!(await serveBackendsAvailable())) {
    throw new Error("serve needs Postgres at 127.0.0.1:5432 (db test) and Redis at 127.0.0.1:6379");
  }
  const python = resolvePython();
  const machine = { node: process.version, python, cpus: cpus().length, loadStart: formatLoad() };
  const dataDir = await makeTempDir("sandpool-bench-lease-");

  // Dev, warm: its first start (initdb), its RSS at rest, its leases.
  const dev = await startDev({
    dataDir,
    python,
    minIdle: DEV_MIN_IDLE,
    maxTotal: DEV_MAX_TOTAL,
    timeoutMs: FIRST_START_TIMEOUT_MS,
  });
  progress(`dev gateway ready in ${formatMs(dev.startMs)} (first start: initdb)`);
  await sleep(REST_SETTLE_MS);
  const devRestRss = await dev.rss();
  const devTokens = mintDevTokens(dataDir, WORKSPACES);
  const devClients = devTokens.map((token) => createClient(dev.url, token));
  const devWarm = await measureWarm(dev, devClients, {
    rounds: DEV_WARM_LEASES,
    burst: 1,
    label: "dev warm",
    minIdle: DEV_MIN_IDLE,
  });
  const devBursts = await measureWarm(dev, devClients, {
    rounds: DEV_BURST_ROUNDS,
    burst: DEV_BURST,
    label: "dev bursts",
    minIdle: DEV_MIN_IDLE,
  });

  // Serve, and the exec paths while both gateways run.
  const serve = await openServe();
  const serveLeases = await measureServeLeases(serve, {
    warmLeases: SERVE_WARM_LEASES,
    refillLeases: SERVE_REFILL_LEASES,
    spacingMs: REFILL_SPACING_MS,
  });
  // Two baselines, one per kind of sandbox: serve's are containers, dev's are processes.
  // One container per client, as serve gives each session its own (the relay places each
  // new session on the next one); the one-client measures use the first. The relay has
  // containers of its own: shared with the direct path, they would have served twice the
  // calls of serve's fresh ones before the rounds, and a sandbox server's CPU per call keeps
  // falling for thousands of calls (the JIT), which the relay would be credited with.
  const box = await startSandboxContainers(SANDBOX_IMAGE, THROUGHPUT_CLIENTS, START_TIMEOUT_MS);
  const relayBox = await startSandboxContainers(SANDBOX_IMAGE, THROUGHPUT_CLIENTS, START_TIMEOUT_MS);
  const boxRelay = await startRelay(relayBox.urls.join(","), START_TIMEOUT_MS);
  const sandbox = await startSandboxServer(python, START_TIMEOUT_MS);
  const relay = await startRelay(sandbox.url, START_TIMEOUT_MS);
  // Each path's `pid` is the process in front of the sandbox, whose CPU per exec is read.
  const paths = [
    { name: "directContainer", url: box.url, urls: box.urls, pid: box.pid, pids: box.pids },
    // The process relay reaches the same server as its direct path (one process serves many
    // sessions); each path makes its own sessions.
    { name: "relayContainer", url: boxRelay.url, pid: boxRelay.pid },
    { name: "direct", url: sandbox.url, pid: sandbox.pid },
    { name: "relay", url: relay.url, pid: relay.pid },
    {
      name: "serve",
      url: serve.gateway.url,
      token: serve.tokens[0],
      pid: serve.gateway.pid,
      settle: () => serve.refilled(),
    },
    { name: "dev", url: dev.url, token: devTokens[0], pid: dev.pid },
  ];
  const latency = await measureExecLatency(paths, { warmup: EXEC_WARMUP, calls: EXEC_CALLS });
  const throughput = await measureThroughput(paths, {
    clients: THROUGHPUT_CLIENTS,
    durationMs: THROUGHPUT_MS,
    maxCallsPerClient: 20_000,
    rounds: THROUGHPUT_ROUNDS,
    warmupPerClient: THROUGHPUT_WARMUP,
  });
  // Its sessions are new ones (serve's in fresh containers): warmed as the throughput's were.
  const cpu = await measureExecCpu(paths, {
    calls: EXEC_CPU_CALLS,
    clients: THROUGHPUT_CLIENTS,
    warmup: THROUGHPUT_WARMUP,
  });
  await relay.stop();
  await sandbox.stop();
  await boxRelay.stop();
  await relayBox.stop();
  await box.stop();
  const serveCold = await measureServeCold(serve, SERVE_COLD_LEASES);
  await serve.close();

  // Dev at rest after all that, then dev cold.
  await sleep(REST_SETTLE_MS);
  const devWorkedRss = await dev.rss();
  await Promise.all(devClients.map((client) => client.close()));
  await dev.stop();
  const devColdGateway = await startDev({
    dataDir,
    python,
    minIdle: 0,
    maxTotal: DEV_MAX_TOTAL,
    timeoutMs: START_TIMEOUT_MS,
  });
  const coldClients = devTokens.map((token) => createClient(devColdGateway.url, token));
  const devCold = await measureCold(devColdGateway, coldClients, DEV_COLD_LEASES);
  await Promise.all(coldClients.map((client) => client.close()));
  await devColdGateway.stop();

  const holding = await measureHoldingSessions(python, {
    sessions: HOLD_SESSIONS,
    workspaces: HOLD_WORKSPACES,
  });

  machine.loadEnd = formatLoad();
  const results = {
    machine,
    serve: {
      minIdle: SERVE_MIN_IDLE,
      spacingMs: REFILL_SPACING_MS,
      warm: serveLeases.warm,
      refill: serveLeases.refill,
      cold: serveCold,
      restMb: serve.restMb,
    },
    dev: {
      minIdle: DEV_MIN_IDLE,
      burst: DEV_BURST,
      warm: devWarm,
      bursts: devBursts,
      cold: devCold,
      restRss: devRestRss,
      workedRss: devWorkedRss,
    },
    exec: { latency, throughput, cpu, cpuCalls: EXEC_CPU_CALLS, clients: THROUGHPUT_CLIENTS },
    holding,
  };
  const figures = buildFigures(results);
  if (json) process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  else printReport(results, figures);
}

await runBench(main);
