/**
 * `npm run bench:isolation`: what gVisor costs here, side by side with a container pool, in
 * one run on one engine (docs/isolation.md). For each isolation level (container: the
 * engine's runc; gvisor: its runsc), straight through the docker runtime, no gateway:
 * - cold start: a sandbox started until its server answers (median of --starts, default 5);
 * - warm session: a new session on a running sandbox (what a warm lease leaves to do), p50/p99;
 * - Execute p50: print(1), a bash command, 200 small file writes in one call, and the first
 *   `import pandas` of a fresh interpreter on the data-science image (no preload);
 * - memory per warm sandbox: its cgroup's usage once it answers with a session open.
 * Needs a Docker engine with runsc registered (scripts/start-docker.sh), the sandbox images
 * (`npm run build:sandbox-image`) and the build (`npm run build`). Options: --starts N,
 * --calls N (Executes per measure, default 30).
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { benchPool, benchSandboxIds } from "./lib/bench-pool.mjs";
import { installCleanupHandlers, onCleanup, runBench } from "./lib/process.mjs";
import { percentile } from "./lib/stats.mjs";
import { formatTable } from "./lib/table.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url);
const { values } = parseArgs({
  options: { starts: { type: "string", default: "5" }, calls: { type: "string", default: "30" } },
});
const STARTS = Number(values.starts);
const CALLS = Number(values.calls);
const LEAN = "sandpool/sandbox:dev";
const DATASCIENCE = "sandpool/sandbox-datascience:dev";
const LEVELS = ["container", "gvisor"];

const dist = (file) => new URL(`../../dist/${file}`, import.meta.url);
if (!existsSync(fileURLToPath(dist("cli/main.js"))))
  throw new Error("dist/ is missing: run `npm run build` first");
const { DockerRuntime } = await import(dist("runtime/docker/docker-runtime.js"));
const { SandboxClient } = await import(dist("forward/sandbox-client.js"));

const pool = (isolation, image = LEAN) => benchPool({ isolation, image, maxTotal: 1 });

const sandboxId = benchSandboxIds("bench");

async function exec(client, endpoint, session, tool, input) {
  const began = performance.now();
  const answer = await client.json(endpoint, {
    method: "POST",
    path: `/sessions/${encodeURIComponent(session)}/exec`,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool, input }),
    timeoutMs: 120_000,
  });
  const ms = performance.now() - began;
  const content = answer.body?.result_block?.content;
  if (answer.status !== 200 || content?.return_code !== 0)
    throw new Error(`${tool} failed: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
  return ms;
}

/** The server holds one session at a time (--max-sessions 1): the next needs this one gone. */
async function endSession(client, endpoint, session) {
  await client.json(endpoint, {
    method: "DELETE",
    path: `/sessions/${encodeURIComponent(session)}`,
    timeoutMs: 30_000,
  });
}

const WRITES = "for i in range(200):\n    open(f'f{i}.txt', 'w').write('x' * 100)";

async function measureLevel(runtime, client, isolation) {
  const starts = [];
  for (let i = 0; i < STARTS; i++) {
    const { sandbox, timings } = await runtime.startTimed({
      sandboxId: sandboxId(),
      pool: pool(isolation),
      deadline: Date.now() + 60_000,
    });
    starts.push(timings.totalMs);
    await runtime.destroy(sandbox.runtimeId);
  }
  const sandbox = await runtime.start({
    sandboxId: sandboxId(),
    pool: pool(isolation),
    deadline: Date.now() + 60_000,
  });
  const sessions = [];
  let session;
  for (let i = 0; i < 10; i++) {
    if (session) await endSession(client, sandbox.endpoint, session);
    const began = performance.now();
    session = await client.createInnerSession(sandbox.endpoint, 60_000);
    sessions.push(performance.now() - began);
  }
  const memoryBytes = (await runtime.usage(sandbox.runtimeId))?.memoryBytes;
  const series = async (tool, input, n = CALLS) => {
    const samples = [];
    for (let i = 0; i < n; i++) samples.push(await exec(client, sandbox.endpoint, session, tool, input));
    return samples;
  };
  const print = await series("code_execution", { code: "print(1)" });
  const bash = await series("bash_code_execution", { command: "echo hi" });
  const writes = await series("code_execution", { code: WRITES }, Math.max(5, Math.floor(CALLS / 3)));
  await runtime.destroy(sandbox.runtimeId);

  const ds = await runtime.start({
    sandboxId: sandboxId(),
    pool: pool(isolation, DATASCIENCE),
    deadline: Date.now() + 60_000,
  });
  const pandas = [];
  for (let i = 0; i < 3; i++) {
    const fresh = await client.createInnerSession(ds.endpoint, 60_000);
    pandas.push(await exec(client, ds.endpoint, fresh, "code_execution", { code: "import pandas" }));
    await endSession(client, ds.endpoint, fresh);
  }
  await runtime.destroy(ds.runtimeId);
  return { starts, sessions, print, bash, writes, pandas, memoryBytes };
}

async function main() {
  installCleanupHandlers();
  const socketDir = await mkdtemp(path.join(os.tmpdir(), "spb-"));
  const runtime = new DockerRuntime({
    hosts: ["unix:///var/run/docker.sock"],
    deployment: `bench-isolation-${process.pid}`,
    socketDir,
    preloadModules: [],
  });
  const client = new SandboxClient();
  onCleanup(async () => {
    for (const sandbox of await runtime.list().catch(() => []))
      await runtime.destroy(sandbox.runtimeId).catch(() => {});
    await runtime.close();
    await client.close();
    await rm(socketDir, { recursive: true, force: true });
  });
  const results = {};
  for (const level of LEVELS) {
    process.stderr.write(`bench:isolation: measuring ${level}...\n`);
    results[level] = await measureLevel(runtime, client, level);
  }
  const ms = (value) => `${value.toFixed(1)} ms`;
  const p50 = (samples) => ms(percentile(samples, 50));
  const rows = [
    ["cold start (median)", ...LEVELS.map((l) => p50(results[l].starts))],
    ["warm session p50", ...LEVELS.map((l) => p50(results[l].sessions))],
    ["warm session p99", ...LEVELS.map((l) => ms(percentile(results[l].sessions, 99)))],
    ["Execute print(1) p50", ...LEVELS.map((l) => p50(results[l].print))],
    ["Execute bash echo p50", ...LEVELS.map((l) => p50(results[l].bash))],
    ["Execute 200 file writes p50", ...LEVELS.map((l) => p50(results[l].writes))],
    ["Execute import pandas (fresh) p50", ...LEVELS.map((l) => p50(results[l].pandas))],
    [
      "memory per warm sandbox",
      ...LEVELS.map((l) =>
        results[l].memoryBytes === undefined ? "n/a" : `${(results[l].memoryBytes / 2 ** 20).toFixed(0)} MiB`,
      ),
    ],
  ];
  process.stdout.write(`${formatTable(["measure", ...LEVELS], rows)}\n`);
  process.stdout.write(`(${STARTS} starts, ${CALLS} calls per Execute measure, ${os.cpus().length} CPUs)\n`);
}

await runBench(main);
