/**
 * `npm run bench:lease`: what the gateway costs, measured through the built `sandpool dev`
 * (dist/cli/main.js) on loopback.
 *
 *   Warm lease   CreateSession with a full warm pool (--min-idle 8), judged on single
 *                leases: create, DELETE, wait until the pool has refilled and the machine
 *                is quiet, repeat. For information, also bursts of BURST creates in a row
 *                (the refill the first ones trigger runs while the later ones are served).
 *   Cold lease   CreateSession with --min-idle 0: every create starts a sandbox.
 *   Exec         trivial code_execution `print(1)` through the gateway, alternated call by
 *                call with the same call sent straight to a `sandpool sandbox` server this
 *                bench starts itself (same program the gateway pools, same client code), and
 *                through a relay with no logic to that server (lib/bare-relay.mjs): what one
 *                more process on the path costs on this machine, whatever it does.
 *
 *   Docker       the same warm and cold measures with `--runtime docker` (containers), when a
 *                Docker engine has the sandbox image; skipped with a line otherwise. Then, per
 *                image (lean, and data-science when built), cold start, warm lease and the
 *                first `import pandas` of a lease against a cold interpreter (lib/image-bench.mjs).
 *
 * All dev runs share one data dir, so PGlite's initdb (~10 s) is paid once. Sessions are
 * spread over a few workspaces so the default 60 sessions/minute quota does not throttle
 * the bench. Loopback only, bounded loops, every child and temp dir cleaned up (also on
 * errors and Ctrl-C). Exits 0 when the measurements ran, whether targets pass or not; 1 when
 * something failed. Progress goes to stderr, results to stdout.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { Client } from "undici";
import { measureImages, printImageReport } from "./lib/image-bench.mjs";
import {
  installCleanupHandlers,
  makeTempDir,
  removeTempDir,
  resolvePython,
  runBench,
  spawnTracked,
  stopProcess,
  tailOf,
  waitForLine,
} from "./lib/process.mjs";
import { createSession, startSandboxServer } from "./lib/sandbox-server.mjs";
import { summarize } from "./lib/stats.mjs";
import { checkBelow, heading, latencyTable, printTable } from "./lib/table.mjs";
import { formatMs, nowMs, progress, withTimeout } from "./lib/timing.mjs";

const MIN_IDLE = 8;
const MAX_TOTAL = 24;
const WARM_LEASES = 100; // single leases, each on a full, quiet pool: the judged figure
const BURST = 4; // creates in a row before the pool is left to refill; <= MIN_IDLE
const BURST_ROUNDS = 10; // -> BURST_ROUNDS * BURST leases, for information
const WARM_UNTIMED = 2; // untimed rounds before each warm series
const COLD_LEASES = 15;
const COLD_UNTIMED = 1;
const SETTLE_MS = 250;
const EXEC_WARMUP = 20;
const EXEC_CALLS = 300;
const WORKSPACES = 4;

const FIRST_START_TIMEOUT_MS = 120_000; // the first dev start runs PGlite's initdb
const START_TIMEOUT_MS = 60_000;
const REFILL_TIMEOUT_MS = 60_000;
const CALL_TIMEOUT_MS = 30_000;

const DOCKER_MIN_IDLE = 3;
const DOCKER_WARM_LEASES = 30;
const DOCKER_COLD_LEASES = 5;
const TARGET_DOCKER_RATIO = 50;
const SANDBOX_IMAGE = "sandpool/sandbox:dev";
const relayPath = fileURLToPath(new URL("./lib/bare-relay.mjs", import.meta.url));
const RELAY_LISTENING = /^relay listening on (http:\/\/\S+)/;

const TARGET_WARM_P50_MS = 5;
const TARGET_WARM_P99_MS = 25;
const TARGET_COLD_RATIO = 20;
const TARGET_GATEWAY_OVERHEAD_MS = 1;

const cliPath = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const TOKEN_LINE = /^SANDPOOL_TOKEN=(\S+)/;

/** A free loopback port: bound, read, released (dev mode takes its port from --port). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * One keep-alive connection (undici, like lib/http.mjs) with an optional bearer token. The
 * gateway and the direct baseline both use this, so client-side cost cancels out.
 */
function createClient(baseUrl, token) {
  const client = new Client(new URL(baseUrl).origin, {
    pipelining: 1,
    headersTimeout: CALL_TIMEOUT_MS,
    bodyTimeout: CALL_TIMEOUT_MS,
  });
  const auth = token ? { authorization: `Bearer ${token}` } : {};
  return {
    async send(method, path, payload) {
      const body = payload === undefined ? undefined : JSON.stringify(payload);
      const headers = body
        ? { ...auth, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }
        : auth;
      const res = await client.request({ method, path, headers, body });
      const text = await res.body.text();
      const json = (res.headers["content-type"] ?? "").includes("application/json") && text.length > 0;
      return { status: res.statusCode, body: json ? JSON.parse(text) : text, text };
    },
    close: () => client.close(),
  };
}

async function startDev({ dataDir, python, minIdle, timeoutMs, runtime = "process" }) {
  const port = await freePort();
  const started = nowMs();
  const child = spawnTracked(process.execPath, [
    cliPath,
    "dev",
    "--host",
    "127.0.0.1",
    "--port",
    String(port),
    "--data-dir",
    dataDir,
    "--python",
    python,
    "--min-idle",
    String(minIdle),
    "--max-total",
    String(MAX_TOTAL),
    "--runtime",
    runtime,
  ]);
  const log = tailOf(child);
  const match = await waitForLine(child, TOKEN_LINE, timeoutMs);
  child.stdout.resume();
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    token: match[1],
    startMs: nowMs() - started,
    log,
    stop: async () => {
      const exit = await stopProcess(child, 15_000);
      if (exit.forced) progress(`warning: dev gateway needed SIGKILL\n${log()}`);
    },
  };
}

/** Bearer tokens for a few workspaces, minted with the dev key in `dataDir`. */
function mintTokens(dataDir) {
  return Array.from({ length: WORKSPACES }, (_, i) =>
    execFileSync(
      process.execPath,
      [cliPath, "token", "--workspace", `bench-${i}`, "--data-dir", dataDir, "--ttl", "3600"],
      { encoding: "utf8", timeout: 30_000 },
    ).trim(),
  );
}

/** Reads the gateway's Prometheus text: pool gauges and lease counts by warm/cold. */
async function readMetrics(client) {
  const answer = await client.send("GET", "/metrics");
  if (answer.status !== 200) throw new Error(`GET /metrics answered ${answer.status}`);
  const value = (pattern) => {
    const match = pattern.exec(answer.text);
    return match ? Number(match[1]) : 0;
  };
  return {
    // The default pool's: with the docker runtime, dev also pools the data-science image.
    idle: value(/^sandpool_pool_sandboxes\{(?=[^}]*pool="default")[^}]*state="idle"[^}]*\} (\S+)$/m),
    starting: value(/^sandpool_pool_sandboxes\{(?=[^}]*pool="default")[^}]*state="starting"[^}]*\} (\S+)$/m),
    warmLeases: value(
      /^sandpool_lease_duration_seconds_count\{(?=[^}]*pool="default")[^}]*start="warm"[^}]*\} (\S+)$/m,
    ),
    coldLeases: value(
      /^sandpool_lease_duration_seconds_count\{(?=[^}]*pool="default")[^}]*start="cold"[^}]*\} (\S+)$/m,
    ),
    createCount: value(/^sandpool_http_request_duration_seconds_count\{route="CreateSession"\} (\S+)$/m),
    createSeconds: value(/^sandpool_http_request_duration_seconds_sum\{route="CreateSession"\} (\S+)$/m),
    execCount: value(/^sandpool_http_request_duration_seconds_count\{route="Execute"\} (\S+)$/m),
    execSeconds: value(/^sandpool_http_request_duration_seconds_sum\{route="Execute"\} (\S+)$/m),
  };
}

/** Mean server-side time (ms) of the requests counted between two metric readings. */
function serverMeanMs(before, after, count, seconds) {
  const n = after[count] - before[count];
  return n > 0 ? ((after[seconds] - before[seconds]) / n) * 1000 : Number.NaN;
}

/** Waits until the pool holds `minIdle` idle sandboxes and none is starting. */
async function waitForRefill(metricsClient, minIdle) {
  const deadline = nowMs() + REFILL_TIMEOUT_MS;
  for (;;) {
    const m = await readMetrics(metricsClient);
    if (m.idle >= minIdle && m.starting === 0) return;
    if (nowMs() > deadline) {
      throw new Error(`pool did not refill within ${REFILL_TIMEOUT_MS} ms (${JSON.stringify(m)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function destroySession(client, sessionId) {
  const answer = await client.send("DELETE", `/sessions/${sessionId}`);
  if (answer.status !== 204) throw new Error(`DELETE answered ${answer.status}: ${answer.text}`);
}

async function execPrintOne(client, sessionId) {
  const answer = await client.send("POST", `/sessions/${sessionId}/exec`, {
    tool: "code_execution",
    input: { code: "print(1)" },
  });
  const content = answer.body?.result_block?.content;
  if (answer.status !== 200 || content?.return_code !== 0 || content?.stdout !== "1\n") {
    throw new Error(`exec answered ${answer.status}: ${answer.text}`);
  }
}

/**
 * `rounds` rounds of `burst` creates in a row on a full, quiet pool; each round by one
 * workspace (so a burst reads its policy once, then hits the cache, as for a busy tenant).
 * Returns each create's time, the times by place in the burst, and the gateway's own count
 * of warm and cold leases and mean CreateSession time over the timed rounds.
 */
async function measureWarm(gateway, clients, { rounds, burst, label, minIdle = MIN_IDLE }) {
  const metrics = createClient(gateway.url);
  const samples = [];
  const byPosition = Array.from({ length: burst }, () => []);
  try {
    let before;
    for (let round = 0; round < WARM_UNTIMED + rounds; round++) {
      await waitForRefill(metrics, minIdle);
      // Sandboxes that just became ready may still be settling; let the machine go quiet.
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      if (round === WARM_UNTIMED) before = await readMetrics(metrics);
      const client = clients[round % clients.length];
      const created = [];
      for (let i = 0; i < burst; i++) {
        const start = nowMs();
        const sessionId = await withTimeout(createSession(client), CALL_TIMEOUT_MS, `${label} create`);
        const ms = nowMs() - start;
        created.push(sessionId);
        if (round >= WARM_UNTIMED) {
          samples.push(ms);
          byPosition[i].push(ms);
        }
      }
      for (const sessionId of created) await destroySession(client, sessionId);
      if ((round + 1) % 20 === 0 || round + 1 === WARM_UNTIMED + rounds) {
        progress(`${label}: round ${round + 1}/${WARM_UNTIMED + rounds}`);
      }
    }
    const after = await readMetrics(metrics);
    return {
      samples,
      byPosition,
      warmLeases: after.warmLeases - before.warmLeases,
      coldLeases: after.coldLeases - before.coldLeases,
      serverCreateMeanMs: serverMeanMs(before, after, "createCount", "createSeconds"),
    };
  } finally {
    await metrics.close();
  }
}

/** Creates on an empty pool (min_idle 0): each one starts a sandbox. */
async function measureCold(gateway, clients, leases = COLD_LEASES) {
  const metrics = createClient(gateway.url);
  const samples = [];
  try {
    const before = await readMetrics(metrics);
    for (let i = 0; i < COLD_UNTIMED + leases; i++) {
      const client = clients[i % clients.length];
      const start = nowMs();
      const sessionId = await withTimeout(createSession(client), CALL_TIMEOUT_MS, "cold create");
      const ms = nowMs() - start;
      if (i >= COLD_UNTIMED) samples.push(ms);
      await destroySession(client, sessionId);
      // Let the destroy job finish so the next create does not share the machine with it.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const after = await readMetrics(metrics);
    return {
      samples,
      warmLeases: after.warmLeases - before.warmLeases,
      coldLeases: after.coldLeases - before.coldLeases,
      serverCreateMeanMs: serverMeanMs(before, after, "createCount", "createSeconds"),
    };
  } finally {
    await metrics.close();
  }
}

/** Starts the no-logic relay (lib/bare-relay.mjs) in front of `upstreamUrl`. */
async function startRelay(upstreamUrl) {
  const child = spawnTracked(process.execPath, [relayPath, upstreamUrl]);
  const log = tailOf(child);
  const match = await waitForLine(child, RELAY_LISTENING, START_TIMEOUT_MS);
  child.stdout.resume();
  return { url: match[1], log, stop: () => stopProcess(child, 5_000) };
}

/**
 * print(1) through the gateway, straight to a sandbox server, and through the bare relay to
 * that server: one call of each per round, the order rotating so none always follows another.
 */
async function measureExec(gateway, token, python) {
  const sandbox = await startSandboxServer(python, START_TIMEOUT_MS);
  const relay = await startRelay(sandbox.url);
  const viaGateway = createClient(gateway.url, token);
  const direct = createClient(sandbox.url);
  const viaRelay = createClient(relay.url);
  const metrics = createClient(gateway.url);
  try {
    const gatewaySession = await createSession(viaGateway);
    const directSession = await createSession(direct);
    const paths = {
      gateway: () => execPrintOne(viaGateway, gatewaySession),
      direct: () => execPrintOne(direct, directSession),
      relay: () => execPrintOne(viaRelay, directSession),
    };
    const names = Object.keys(paths);
    for (let i = 0; i < EXEC_WARMUP; i++) for (const name of names) await paths[name]();
    const samples = { gateway: [], direct: [], relay: [] };
    const before = await readMetrics(metrics);
    for (let i = 0; i < EXEC_CALLS; i++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(i + k) % names.length];
        const start = nowMs();
        await paths[name]();
        samples[name].push(nowMs() - start);
      }
      if ((i + 1) % 100 === 0) progress(`exec: ${i + 1}/${EXEC_CALLS} rounds`);
    }
    const after = await readMetrics(metrics);
    await destroySession(viaGateway, gatewaySession);
    await destroySession(direct, directSession);
    return {
      gatewaySamples: samples.gateway,
      directSamples: samples.direct,
      relaySamples: samples.relay,
      serverExecMeanMs: serverMeanMs(before, after, "execCount", "execSeconds"),
    };
  } finally {
    await metrics.close();
    await viaGateway.close();
    await direct.close();
    await viaRelay.close();
    await relay.stop();
    await sandbox.stop();
  }
}

const { headers, row } = latencyTable(["n", "median", "p90", "p99", "min", "max"]);

/** The 1, 5 and 15 minute load averages: loopback latency means little on a busy machine. */
function formatLoad() {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
}

function dockerImagePresent() {
  try {
    execFileSync("docker", ["image", "inspect", SANDBOX_IMAGE], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

/** The same warm and cold measures with the docker runtime: real containers. */
async function measureDocker(dataDir, python, tokens) {
  const result = {};
  for (const [phase, minIdle] of [
    ["warm", DOCKER_MIN_IDLE],
    ["cold", 0],
  ]) {
    const gateway = await startDev({
      dataDir,
      python,
      minIdle,
      timeoutMs: START_TIMEOUT_MS,
      runtime: "docker",
    });
    progress(`docker dev gateway (${phase}) ready in ${formatMs(gateway.startMs)}`);
    const clients = tokens.map((token) => createClient(gateway.url, token));
    try {
      result[phase] =
        phase === "warm"
          ? await measureWarm(gateway, clients, {
              rounds: DOCKER_WARM_LEASES,
              burst: 1,
              label: "docker warm",
              minIdle,
            })
          : await measureCold(gateway, clients, DOCKER_COLD_LEASES);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
      await gateway.stop();
    }
  }
  return result;
}

async function main() {
  installCleanupHandlers();
  const startLoad = formatLoad();
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first`);
  const python = resolvePython("python3");
  progress(`python: ${python}`);
  progress(`node:   ${process.execPath} (${process.version})`);
  progress(`load average: ${startLoad} on ${cpus().length} CPUs`);
  const dataDir = await makeTempDir("sandpool-lease-bench-");

  progress(`phase 1/4: dev gateway with --min-idle ${MIN_IDLE} (first start runs PGlite initdb)`);
  const warmGateway = await startDev({
    dataDir,
    python,
    minIdle: MIN_IDLE,
    timeoutMs: FIRST_START_TIMEOUT_MS,
  });
  progress(`dev gateway ready in ${formatMs(warmGateway.startMs)} at ${warmGateway.url}`);
  const tokens = mintTokens(dataDir);
  let warm;
  let bursts;
  let exec;
  const clients = tokens.map((token) => createClient(warmGateway.url, token));
  try {
    progress(`warm: ${WARM_LEASES} single leases (+${WARM_UNTIMED} untimed), each on a refilled pool`);
    warm = await measureWarm(warmGateway, clients, { rounds: WARM_LEASES, burst: 1, label: "warm" });
    progress(`burst: ${BURST_ROUNDS} rounds of ${BURST} creates in a row (+${WARM_UNTIMED} untimed)`);
    bursts = await measureWarm(warmGateway, clients, { rounds: BURST_ROUNDS, burst: BURST, label: "burst" });
    progress(`exec: ${EXEC_WARMUP} warm-up + ${EXEC_CALLS} rounds (gateway, direct, bare relay)`);
    exec = await measureExec(warmGateway, tokens[0], python);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    await warmGateway.stop();
  }

  progress("phase 2/4: dev gateway with --min-idle 0 (same data dir)");
  const coldGateway = await startDev({ dataDir, python, minIdle: 0, timeoutMs: START_TIMEOUT_MS });
  progress(`dev gateway ready in ${formatMs(coldGateway.startMs)}`);
  let cold;
  const coldClients = tokens.map((token) => createClient(coldGateway.url, token));
  try {
    progress(`cold: ${COLD_LEASES} creates (+${COLD_UNTIMED} untimed)`);
    cold = await measureCold(coldGateway, coldClients);
  } finally {
    await Promise.all(coldClients.map((client) => client.close()));
    await coldGateway.stop();
  }
  let docker;
  if (dockerImagePresent()) {
    progress(`phase 3/4: docker runtime, --min-idle ${DOCKER_MIN_IDLE}, then 0 (containers)`);
    docker = await measureDocker(dataDir, python, tokens);
    progress("phase 3/4: each sandbox image: cold start, warm lease, first import of pandas");
    docker.images = await measureImages(dataDir);
  } else {
    progress(`phase 3/4: skipped: no Docker engine with ${SANDBOX_IMAGE} (npm run build:sandbox-image)`);
  }
  await removeTempDir(dataDir);

  progress("phase 4/4: report");
  const warmStats = summarize(warm.samples);
  const coldStats = summarize(cold.samples);
  const gatewayExec = summarize(exec.gatewaySamples);
  const directExec = summarize(exec.directSamples);
  const ratio = coldStats.median / warmStats.median;
  const overhead = gatewayExec.median - directExec.median;
  const relayOverhead = summarize(exec.relaySamples).median - directExec.median;

  const p50Target = checkBelow(warmStats.median, TARGET_WARM_P50_MS);
  const p99Target = checkBelow(warmStats.p99, TARGET_WARM_P99_MS);
  const ratioPass = Number.isFinite(ratio) && ratio >= TARGET_COLD_RATIO;
  const ratioTarget = {
    label: `>= ${TARGET_COLD_RATIO}x`,
    pass: ratioPass,
    verdict: ratioPass ? "PASS" : "FAIL",
  };
  const overheadTarget = checkBelow(overhead, TARGET_GATEWAY_OVERHEAD_MS);

  process.stdout.write(
    `sandpool lease bench  node ${process.version}  python ${python}\n` +
      "dev gateway (PGlite, memory store, process runtime) on loopback, HTTP keep-alive via undici.\n" +
      `machine: ${cpus().length} CPUs; load average at the start ${startLoad}, at the end ${formatLoad()}\n`,
  );

  heading(`CreateSession (warm: min_idle ${MIN_IDLE}; cold: min_idle 0)`);
  printTable(headers, [
    row("warm, single lease on a full pool", warm.samples, p50Target),
    row(`info: warm, bursts of ${BURST}, all`, bursts.samples),
    ...bursts.byPosition.map((samples, i) => row(`info:   create #${i + 1} of a burst`, samples)),
    row("cold (every create starts a sandbox)", cold.samples),
  ]);
  process.stdout.write(
    `warm p99 ${formatMs(warmStats.p99)}; target < ${TARGET_WARM_P99_MS} ms: ${p99Target.verdict}\n` +
      `cold/warm median ratio ${ratio.toFixed(1)}x; target >= ${TARGET_COLD_RATIO}x: ${ratioTarget.verdict}\n` +
      `gateway's count: ${warm.warmLeases + bursts.warmLeases} warm and ` +
      `${warm.coldLeases + bursts.coldLeases} cold leases in the warm phases, ` +
      `${cold.coldLeases} cold in the cold phase\n` +
      `server-side CreateSession mean (metrics): single ${formatMs(warm.serverCreateMeanMs)}, ` +
      `bursts ${formatMs(bursts.serverCreateMeanMs)}, cold ${formatMs(cold.serverCreateMeanMs)}\n`,
  );

  heading(`Exec "print(1)" (${EXEC_CALLS} calls each, rotated)`);
  printTable(headers, [
    row("through the gateway", exec.gatewaySamples),
    row("straight to a sandbox server", exec.directSamples),
    row("baseline: through a relay with no logic", exec.relaySamples),
  ]);
  process.stdout.write(
    `gateway adds ${formatMs(overhead)} (difference of medians); ` +
      `target < ${TARGET_GATEWAY_OVERHEAD_MS} ms: ${overheadTarget.verdict}\n` +
      `baseline: a relay with no logic adds ${formatMs(relayOverhead)}: the cost of one more ` +
      `process on the path here; the gateway's own work is the difference, ${formatMs(overhead - relayOverhead)}\n` +
      `server-side Execute mean ${formatMs(exec.serverExecMeanMs)} (includes the sandbox's own time)\n`,
  );

  let dockerRows = [];
  if (docker) {
    const dWarm = summarize(docker.warm.samples);
    const dCold = summarize(docker.cold.samples);
    const dRatio = dCold.median / dWarm.median;
    const dRatioPass = Number.isFinite(dRatio) && dRatio >= TARGET_DOCKER_RATIO;
    const dP99 = checkBelow(dWarm.p99, TARGET_WARM_P99_MS);
    heading(
      `CreateSession, docker runtime (warm: min_idle ${DOCKER_MIN_IDLE}; cold: docker create + start + ready)`,
    );
    printTable(headers, [
      row("docker warm, single lease on a full pool", docker.warm.samples, dP99),
      row("docker cold (every create starts a container)", docker.cold.samples),
    ]);
    printImageReport(docker.images);
    dockerRows = [
      ["docker warm CreateSession p99", formatMs(dWarm.p99), dP99.label, dP99.verdict],
      [
        "docker cold/warm median ratio",
        `${dRatio.toFixed(1)}x`,
        `>= ${TARGET_DOCKER_RATIO}x`,
        dRatioPass ? "PASS" : "FAIL",
      ],
    ];
  }

  heading("Summary");
  printTable(
    ["target", "figure", "limit", "result"],
    [
      ["warm CreateSession p50", formatMs(warmStats.median), p50Target.label, p50Target.verdict],
      ["warm CreateSession p99", formatMs(warmStats.p99), p99Target.label, p99Target.verdict],
      ["cold/warm median ratio", `${ratio.toFixed(1)}x`, ratioTarget.label, ratioTarget.verdict],
      [
        "gateway exec overhead (median diff)",
        formatMs(overhead),
        overheadTarget.label,
        overheadTarget.verdict,
      ],
      ...dockerRows,
    ],
  );
}

await runBench(main);
