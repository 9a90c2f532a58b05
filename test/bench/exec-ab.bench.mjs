/**
 * `npm run bench:exec-ab -- --base DIR`: `sandpool serve` of another checkout (DIR, built)
 * beside this one's, each on a deployment of its own (Redis, Postgres, docker), called in
 * alternating blocks so that the machine's drift (its load, a noisy neighbour) falls on both
 * alike: the CPU each gateway spends per exec and the p50 latency. A change to the hot path is
 * judged by this, run after run; two separate runs of bench:exec-cpu on this machine differ by
 * more than most changes do.
 *
 *   node test/bench/exec-ab.bench.mjs --base DIR [--clients N] [--blocks N] [--block N]
 *                                     [--warmup N] [--json]
 *
 * --base DIR     the other checkout (its dist/ built, its node_modules installed)
 * --clients N    concurrent clients per gateway, a session each (default 1)
 * --blocks N     blocks per gateway, alternating which goes first (default 8)
 * --block N      calls per block (default 500)
 * --warmup N     calls per client before anything is counted (default 2500: hot code, the
 *                gateway's and that of each client's sandbox, a fresh container per session)
 * --json         one JSON object on stdout instead of the text
 *
 * Needs Postgres (127.0.0.1:5432, db test), Redis (127.0.0.1:6379) and the Docker engine with
 * sandpool/sandbox:dev; removes everything it made.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { createClient, createSession, execPrintOne } from "./lib/client.mjs";
import { cpuMsOf } from "./lib/cpu-time.mjs";
import { waitForRefill } from "./lib/gateway-metrics.mjs";
import { installCleanupHandlers, onCleanup, runBench } from "./lib/process.mjs";
import * as thisCheckout from "./lib/serve-deployment.mjs";
import { percentile } from "./lib/stats.mjs";
import { progress } from "./lib/timing.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url);

const { values } = parseArgs({
  options: {
    base: { type: "string" },
    clients: { type: "string", default: "1" },
    blocks: { type: "string", default: "8" },
    block: { type: "string", default: "500" },
    warmup: { type: "string", default: "2500" },
    json: { type: "boolean", default: false },
  },
});
if (!values.base) throw new Error("--base DIR is required: the checkout to compare this one with");
const positive = (name) => {
  const n = Number(values[name]);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`--${name} must be a positive integer, got ${values[name]}`);
  return n;
};
const [clients, blocks, block, warmup] = ["clients", "blocks", "block", "warmup"].map(positive);
const callsPerClient = Math.ceil(block / clients);

async function openSide(name, lib) {
  const deployment = await lib.createServeDeployment(thisCheckout.execBenchConfig(clients));
  const side = { name, deployment, workers: [], cpuMs: 0, calls: 0, took: [] };
  side.unregister = onCleanup(() => deployment.close());
  await deployment.migrate();
  side.gateway = await deployment.startGateway(undefined);
  const token = await deployment.token("bench-ab");
  for (let i = 0; i < clients; i++) {
    const client = createClient(side.gateway.url, token);
    side.workers.push({ client, sessionId: await createSession(client) });
  }
  const metrics = createClient(side.gateway.url);
  await waitForRefill(metrics, clients + 1).finally(() => metrics.close());
  return side;
}

/** `calls` per client of `side`, their latencies kept when `record`. */
function callOn(side, calls, record) {
  return Promise.all(
    side.workers.map(async (w) => {
      for (let i = 0; i < calls; i++) {
        const started = performance.now();
        await execPrintOne(w.client, w.sessionId);
        if (record) side.took.push(performance.now() - started);
      }
    }),
  );
}

async function closeSide(side) {
  for (const w of side.workers) await w.client.close();
  side.unregister();
  await side.deployment.close();
}

async function main() {
  installCleanupHandlers();
  const baseLib = await import(path.resolve(values.base, "test/bench/lib/serve-deployment.mjs"));
  const sides = [];
  try {
    sides.push(await openSide("base", baseLib), await openSide("this", thisCheckout));
    for (const side of sides) await callOn(side, warmup, false);
    progress(`both gateways hot; ${blocks} blocks of ${callsPerClient * clients} calls each`);
    for (let b = 0; b < blocks; b++) {
      for (const side of b % 2 === 0 ? sides : [...sides].reverse()) {
        const before = await cpuMsOf(side.gateway.pid);
        await callOn(side, callsPerClient, true);
        side.cpuMs += (await cpuMsOf(side.gateway.pid)) - before;
        side.calls += callsPerClient * clients;
      }
    }
    const figures = Object.fromEntries(
      sides.map((s) => [s.name, { cpuUsPerExec: (s.cpuMs * 1000) / s.calls, p50Ms: percentile(s.took, 50) }]),
    );
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ base: values.base, clients, blocks, block, figures }, null, 2)}\n`,
      );
    } else {
      process.stdout.write(
        `serve, base (${values.base}) and this checkout, ${clients} client(s), alternating blocks\n`,
      );
      for (const [name, f] of Object.entries(figures)) {
        process.stdout.write(
          `  ${name.padEnd(5)} ${f.cpuUsPerExec.toFixed(0).padStart(5)} us of CPU per exec  p50 ${f.p50Ms.toFixed(3)} ms\n`,
        );
      }
    }
  } finally {
    for (const side of sides) await closeSide(side);
  }
}

await runBench(main);
