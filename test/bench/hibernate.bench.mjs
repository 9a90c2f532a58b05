/**
 * `npm run bench:hibernate`: what hibernating a session costs and saves, beside a cold start
 * of the same image, in one run on one engine (docs/hibernate.md). For each isolation level
 * (gvisor: memory and files checkpointed whole; container: the session's workspace only),
 * straight through the docker runtime and the file-system checkpoint store, no gateway:
 * - cold start + first Execute: a new sandbox until its server answers, a session, print(1);
 * - hibernate: a sandbox whose interpreter holds 50 MB is saved and its container removed;
 * - resume + first Execute: the checkpoint restored until the server answers, then
 *   `print(counter)` (gvisor: the same interpreter; container: a fresh one, files put back);
 *   p50 and p99 over --rounds hibernate/resume cycles of one session;
 * - checkpoint size on disk, and the memory freed (the sandbox's cgroup before hibernating).
 * Needs a Docker engine with runsc registered (scripts/start-docker.sh), the sandbox image
 * (`npm run build:sandbox-image`) and the build (`npm run build`). Options: --rounds N
 * (default 10), --starts N (cold starts, default 5), --image NAME (default sandpool/sandbox:dev;
 * its server must know `POST /sandbox/pause-listener`).
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
  options: {
    rounds: { type: "string", default: "10" },
    starts: { type: "string", default: "5" },
    image: { type: "string", default: "sandpool/sandbox:dev" },
  },
});
const ROUNDS = Number(values.rounds);
const STARTS = Number(values.starts);
const IMAGE = values.image;
const LEVELS = ["gvisor", "container"];
const WORKSPACE = "bench";

const dist = (file) => new URL(`../../dist/${file}`, import.meta.url);
if (!existsSync(fileURLToPath(dist("cli/main.js"))))
  throw new Error("dist/ is missing: run `npm run build` first");
const { DockerRuntime } = await import(dist("runtime/docker/docker-runtime.js"));
const { SandboxClient } = await import(dist("forward/sandbox-client.js"));
const { FsCheckpointStore } = await import(dist("hibernate/fs-checkpoint-store.js"));
const { hibernateSandbox, resumeSandbox } = await import(dist("hibernate/hibernate-sandbox.js"));

const pool = (isolation) => benchPool({ isolation, image: IMAGE, maxTotal: 2 });

const sandboxId = benchSandboxIds("hib");

async function exec(client, endpoint, session, code) {
  const answer = await client.json(endpoint, {
    method: "POST",
    path: `/sessions/${encodeURIComponent(session)}/exec`,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool: "code_execution", input: { code } }),
    timeoutMs: 120_000,
  });
  const content = answer.body?.result_block?.content;
  if (answer.status !== 200 || content?.return_code !== 0)
    throw new Error(`Execute failed: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
  return content.stdout;
}

async function measureLevel(runtime, client, store, isolation) {
  const coldStarts = [];
  for (let i = 0; i < STARTS; i++) {
    const began = performance.now();
    const sandbox = await runtime.start({
      sandboxId: sandboxId(),
      pool: pool(isolation),
      deadline: Date.now() + 60_000,
    });
    const session = await client.createInnerSession(sandbox.endpoint, 60_000);
    await exec(client, sandbox.endpoint, session, "print(1)");
    coldStarts.push(performance.now() - began);
    await runtime.destroy(sandbox.runtimeId);
  }

  const id = sandboxId();
  let sandbox = {
    ...(await runtime.start({ sandboxId: id, pool: pool(isolation), deadline: Date.now() + 60_000 })),
    sandboxId: id,
  };
  let sandboxSessionId = await client.createInnerSession(sandbox.endpoint, 60_000);
  await exec(
    client,
    sandbox.endpoint,
    sandboxSessionId,
    "counter = 0\nheld = bytearray(50 * 1024 * 1024)\nopen('notes.txt', 'w').write('x' * 4096)",
  );
  const sessionId = `ses${isolation}`;
  const hibernations = [];
  const resumes = [];
  const sizes = [];
  const freed = [];
  for (let round = 0; round < ROUNDS; round++) {
    freed.push((await runtime.usage(sandbox.runtimeId))?.memoryBytes);
    const began = performance.now();
    const hibernated = await hibernateSandbox({
      hibernation: runtime.hibernation,
      store,
      workspace: WORKSPACE,
      sessionId,
      runtimeId: sandbox.runtimeId,
      sandboxId: sandbox.sandboxId,
      sandboxSessionId,
      pool: pool(isolation),
      bounds: {},
      destroy: (runtimeId) => runtime.destroy(runtimeId),
    });
    hibernations.push(performance.now() - began);
    sizes.push(hibernated.bytes);
    const resumeBegan = performance.now();
    const resumed = await resumeSandbox({
      hibernation: runtime.hibernation,
      store,
      workspace: WORKSPACE,
      sessionId,
      hibernated,
      pool: pool(isolation),
      deadline: Date.now() + 60_000,
      freshSandboxId: sandboxId,
      openSession: (started) => client.createInnerSession(started.endpoint, 60_000),
      destroy: (runtimeId) => runtime.destroy(runtimeId),
    });
    await exec(
      client,
      resumed.endpoint,
      resumed.sandboxSessionId,
      "print(globals().get('counter'), len(open('notes.txt').read()))",
    );
    resumes.push(performance.now() - resumeBegan);
    sandbox = resumed;
    sandboxSessionId = resumed.sandboxSessionId;
    if (isolation === "container") {
      // A fresh interpreter: hold the same memory again, so each round frees as much.
      await exec(
        client,
        sandbox.endpoint,
        sandboxSessionId,
        "counter = 0\nheld = bytearray(50 * 1024 * 1024)",
      );
    }
  }
  await store.delete(WORKSPACE, sessionId);
  await runtime.destroy(sandbox.runtimeId);
  return { coldStarts, hibernations, resumes, sizes, freed: freed.filter((v) => v !== undefined) };
}

async function main() {
  installCleanupHandlers();
  const socketDir = await mkdtemp(path.join(os.tmpdir(), "spb-"));
  const storeDir = await mkdtemp(path.join(os.tmpdir(), "spb-ckpt-"));
  const runtime = new DockerRuntime({
    hosts: ["unix:///var/run/docker.sock"],
    deployment: `bench-hibernate-${process.pid}`,
    socketDir,
    preloadModules: [],
  });
  const client = new SandboxClient();
  const store = new FsCheckpointStore(path.join(storeDir, "checkpoints"));
  onCleanup(async () => {
    for (const sandbox of await runtime.list().catch(() => []))
      await runtime.destroy(sandbox.runtimeId).catch(() => {});
    await runtime.close();
    await client.close();
    await rm(socketDir, { recursive: true, force: true });
    await rm(storeDir, { recursive: true, force: true });
  });
  const results = {};
  for (const level of LEVELS) {
    process.stderr.write(`bench:hibernate: measuring ${level}...\n`);
    results[level] = await measureLevel(runtime, client, store, level);
  }
  const ms = (value) => `${value.toFixed(0)} ms`;
  const mib = (value) => (value === undefined ? "n/a" : `${(value / 2 ** 20).toFixed(1)} MiB`);
  const rows = [
    ["cold start + first Execute (median)", ...LEVELS.map((l) => ms(percentile(results[l].coldStarts, 50)))],
    ["hibernate p50", ...LEVELS.map((l) => ms(percentile(results[l].hibernations, 50)))],
    ["resume + first Execute p50", ...LEVELS.map((l) => ms(percentile(results[l].resumes, 50)))],
    ["resume + first Execute p99", ...LEVELS.map((l) => ms(percentile(results[l].resumes, 99)))],
    ["what resume keeps", "memory + files", "files"],
    ["checkpoint size (median)", ...LEVELS.map((l) => mib(percentile(results[l].sizes, 50)))],
    [
      "memory freed per session (median)",
      ...LEVELS.map((l) => mib(results[l].freed.length ? percentile(results[l].freed, 50) : undefined)),
    ],
  ];
  process.stdout.write(`${formatTable(["measure", ...LEVELS], rows)}\n`);
  const verdicts = LEVELS.map((l) => {
    const faster = percentile(results[l].resumes, 50) < percentile(results[l].coldStarts, 50);
    return `${l}: resume + first Execute ${faster ? "faster" : "SLOWER"} than a cold start`;
  });
  process.stdout.write(`${verdicts.join("; ")}\n`);
  process.stdout.write(
    `(${ROUNDS} hibernate/resume rounds, ${STARTS} cold starts, ${os.cpus().length} CPUs)\n`,
  );
}

await runBench(main);
