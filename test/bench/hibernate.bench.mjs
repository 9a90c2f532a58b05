/**
 * `npm run bench:hibernate`: what hibernating a session costs and saves, measured through the
 * real HTTP gateway (`sandpool serve` with Redis, Postgres and docker sandboxes, as in
 * production), beside a cold start of the same image in the same run (docs/hibernate.md). For
 * each isolation level (gvisor: a memory checkpoint, the interpreter kept; container: the
 * session's files, a fresh interpreter):
 * - cold start + first Execute: CreateSession on a dry pool (a fresh container started for
 *   it) and its first Execute of print(1), as a client sees them (median of --starts);
 * - hibernate: the admin endpoint (POST /admin/v1/sessions/{id}/hibernate) on a session whose
 *   interpreter holds 50 MB, until it answers: the sandbox saved, its container removed;
 * - resume + first Execute: the session's next Execute, which resumes it, then prints its
 *   counter (gvisor: the same interpreter; container: files only, into a warm sandbox of the
 *   pool, as a deployment with minIdle has one), p50 and p99 over --rounds cycles;
 * - the checkpoint's size (the hibernate answer's bytes) and the memory freed (the sandbox's
 *   cgroup just before it was saved).
 * Bounded: --starts (default 3) cold starts and --rounds (default 5) cycles per level, and the
 * cycles stop early past --max-seconds (default 150) of the whole run, saying so.
 * Needs Postgres and Redis (as the integration tests), a Docker engine with runsc registered
 * (scripts/start-docker.sh), the sandbox image (`npm run build:sandbox-image`; --image NAME,
 * default sandpool/sandbox:dev, whose server knows POST /sandbox/pause-listener) and the build.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import Dockerode from "dockerode";
import { CgroupUsageReader } from "../../dist/runtime/docker/cgroup-usage.js";
import { usageFromStats } from "../../dist/runtime/docker/container-usage.js";
import { createClient, createSession, destroySession, execPrintOne } from "./lib/client.mjs";
import { installCleanupHandlers, onCleanup, runBench } from "./lib/process.mjs";
import { createServeDeployment, serveBackendsAvailable } from "./lib/serve-deployment.mjs";
import { percentile } from "./lib/stats.mjs";
import { formatTable } from "./lib/table.mjs";
import { progress } from "./lib/timing.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url);
const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "5" },
    starts: { type: "string", default: "3" },
    image: { type: "string", default: "sandpool/sandbox:dev" },
    "max-seconds": { type: "string", default: "150" },
  },
});
const ROUNDS = Number(values.rounds);
const STARTS = Number(values.starts);
const IMAGE = values.image;
const MAX_MS = Number(values["max-seconds"]) * 1000;
const LEVELS = ["gvisor", "container"];
/** The pool each level's workspace leases from (its policy's isolation picks it). */
const POOL = { gvisor: "gv", container: "default" };
const CALL_TIMEOUT_MS = 120_000;
/** The session's state before each save: a counter, 50 MB held, a file. */
const SETUP = "counter = 41\nheld = bytearray(50 * 1024 * 1024)\nopen('notes.txt', 'w').write('x' * 4096)";

const config = (checkpointDir) => `
pools:
  - name: default
    image: ${IMAGE}
    minIdle: 0
    maxTotal: 4
    coldStartTimeoutMs: 60000
    demand: false
  - name: gv
    image: ${IMAGE}
    isolation: gvisor
    minIdle: 0
    maxTotal: 4
    coldStartTimeoutMs: 60000
    demand: false
policy:
  allowedImages: [${IMAGE}]
  defaultImage: ${IMAGE}
  maxConcurrentSessions: 8
  sessionsPerMinute: 1000
  # Every cold start is a fresh container, never a sandbox an earlier session parked.
  sandboxReuse: false
hibernate:
  checkpointDir: ${checkpointDir}
intervals:
  warmMs: 250
`;

function check(answer, status, what) {
  if (answer.status !== status) throw new Error(`${what} answered ${answer.status}: ${answer.text}`);
  return answer.body;
}

/** Polls `condition` every 100 ms until it holds; fails naming `what` after `timeoutMs`. */
async function waitFor(condition, what, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function main() {
  installCleanupHandlers();
  if (!(await serveBackendsAvailable()))
    throw new Error("Postgres (127.0.0.1:5432) and Redis (127.0.0.1:6379) must answer");
  const began = Date.now();
  const loadBefore = os.loadavg();
  const checkpointRoot = await mkdtemp(path.join(os.tmpdir(), "spb-hib-"));
  const deployment = await createServeDeployment(config(path.join(checkpointRoot, "checkpoints")));
  onCleanup(async () => {
    await deployment.close();
    await rm(checkpointRoot, { recursive: true, force: true });
  });
  await deployment.migrate();
  const gateway = await deployment.startGateway(undefined, { SANDPOOL_DEFAULT_IMAGE: IMAGE });
  const admin = createClient(gateway.url, await deployment.adminToken(), { timeoutMs: CALL_TIMEOUT_MS });
  onCleanup(() => admin.close());
  const docker = new Dockerode();
  const cgroups = new CgroupUsageReader();

  const poolStatus = async (name) =>
    check(await admin.send("GET", "/admin/v1/pools"), 200, "GET /pools").items.find((p) => p.name === name);
  /** The memory the session's sandbox holds now: its cgroup, else Docker's stats. */
  const memoryOf = async (sessionId) => {
    const { items } = check(await admin.send("GET", "/admin/v1/sessions"), 200, "GET /sessions");
    const containerId = items.find((item) => item.id === sessionId)?.runtimeId.split(":")[1];
    if (!containerId) return undefined;
    const usage =
      (await cgroups.read(containerId)) ??
      usageFromStats(await docker.getContainer(containerId).stats({ stream: false }));
    return usage?.memoryBytes;
  };

  async function measureLevel(isolation) {
    const workspace = `bench-${isolation}`;
    const pool = POOL[isolation];
    if (isolation === "gvisor") {
      // Its sessions lease only gVisor pools.
      const answer = await admin.send("PUT", `/admin/v1/workspaces/${workspace}/policy`, { isolation });
      check(answer, 200, "PUT policy");
    }
    const client = createClient(gateway.url, await deployment.token(workspace), {
      timeoutMs: CALL_TIMEOUT_MS,
    });
    onCleanup(() => client.close());

    // Cold starts: the pool is dry (minIdle 0), so each CreateSession starts a container.
    const coldStarts = [];
    for (let i = 0; i < STARTS; i++) {
      // The last one's container gone first: its removal must not share the measured start.
      await waitFor(async () => (await poolStatus(pool)).members === 0, "the pool to empty");
      const start = performance.now();
      const sessionId = await createSession(client);
      await execPrintOne(client, sessionId);
      coldStarts.push(performance.now() - start);
      await destroySession(client, sessionId);
    }

    // A files resume goes into a warm sandbox: the pool keeps one from now on.
    if (isolation === "container") {
      check(await admin.send("PATCH", `/admin/v1/pools/${pool}`, { minIdle: 1 }), 200, "PATCH pool");
    }
    const sessionId = await createSession(client);
    const run = async (code) => {
      const answer = await client.send("POST", `/sessions/${sessionId}/exec`, {
        tool: "code_execution",
        input: { code },
      });
      const content = check(answer, 200, "Execute").result_block?.content;
      if (content?.return_code !== 0) throw new Error(`Execute failed: ${answer.text.slice(0, 300)}`);
      return content.stdout;
    };
    await run(SETUP);
    const hibernations = [];
    const resumes = [];
    const sizes = [];
    const freed = [];
    let rounds = 0;
    for (; rounds < ROUNDS && Date.now() - began < MAX_MS; rounds++) {
      if (isolation === "container")
        await waitFor(async () => (await poolStatus(pool)).idle >= 1, "a warm sandbox");
      freed.push(await memoryOf(sessionId));
      const saving = performance.now();
      const saved = check(
        await admin.send("POST", `/admin/v1/sessions/${sessionId}/hibernate`),
        200,
        "POST hibernate",
      ).hibernated;
      hibernations.push(performance.now() - saving);
      if (saved.state !== "hibernated") throw new Error(`hibernate left the session ${saved.state}`);
      sizes.push(saved.checkpoint.bytes);
      const resuming = performance.now();
      const seen = await run("print(globals().get('counter'), len(open('notes.txt').read()))");
      resumes.push(performance.now() - resuming);
      const expected = isolation === "gvisor" ? "41 4096\n" : "None 4096\n";
      if (seen !== expected) throw new Error(`after the resume: ${JSON.stringify(seen)}, not ${expected}`);
      // A fresh interpreter (files only): hold the same memory again, so each round frees as much.
      if (isolation === "container") await run(SETUP);
    }
    await destroySession(client, sessionId);
    return { coldStarts, hibernations, resumes, sizes, freed: freed.filter((v) => v !== undefined), rounds };
  }

  const results = {};
  for (const level of LEVELS) {
    progress(`hibernate: measuring ${level} through the gateway...`);
    results[level] = await measureLevel(level);
  }
  const ms = (value) => `${value.toFixed(0)} ms`;
  const mib = (value) => {
    if (value === undefined) return "n/a";
    return value < 2 ** 20 ? `${(value / 1024).toFixed(1)} KiB` : `${(value / 2 ** 20).toFixed(1)} MiB`;
  };
  const p = (samples, q) => (samples.length ? percentile(samples, q) : undefined);
  const rows = [
    ["rounds", ...LEVELS.map((l) => String(results[l].rounds))],
    ["cold start + first Execute (median)", ...LEVELS.map((l) => ms(p(results[l].coldStarts, 50)))],
    ["hibernate p50 (admin endpoint)", ...LEVELS.map((l) => ms(p(results[l].hibernations, 50)))],
    ["resume + first Execute p50", ...LEVELS.map((l) => ms(p(results[l].resumes, 50)))],
    ["resume + first Execute p99", ...LEVELS.map((l) => ms(p(results[l].resumes, 99)))],
    ["what resume keeps", "memory + files", "files"],
    ["checkpoint size (median)", ...LEVELS.map((l) => mib(p(results[l].sizes, 50)))],
    ["memory freed per session (median)", ...LEVELS.map((l) => mib(p(results[l].freed, 50)))],
  ];
  process.stdout.write(`${formatTable(["measure", ...LEVELS], rows)}\n`);
  const verdicts = LEVELS.map((l) => {
    const faster = p(results[l].resumes, 50) < p(results[l].coldStarts, 50);
    return `${l}: resume + first Execute ${faster ? "faster" : "SLOWER"} than a cold start`;
  });
  process.stdout.write(`${verdicts.join("; ")}\n`);
  const short = LEVELS.filter((l) => results[l].rounds < ROUNDS);
  if (short.length > 0)
    process.stdout.write(`stopped early past --max-seconds: ${short.join(", ")} ran fewer rounds\n`);
  const load = (avg) => avg.map((v) => v.toFixed(2)).join(" ");
  process.stdout.write(
    `(through sandpool serve; ${STARTS} cold starts per level; ${os.cpus().length} CPUs; ` +
      `load average ${load(loadBefore)} at the start, ${load(os.loadavg())} at the end; ` +
      `${((Date.now() - began) / 1000).toFixed(0)} s)\n`,
  );
}

await runBench(main);
