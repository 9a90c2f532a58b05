/**
 * `npm run bench:exec-cpu`: the CPU `sandpool serve` spends per Execute (Redis store, docker
 * runtime), beside the CPU of a relay with no logic in front of a sandbox container (made as
 * the docker runtime makes them, test/bench/lib/sandbox-container.mjs) and of that container's
 * server itself: the figure to trim the gateway's own work by, and one the machine's load
 * hardly moves (unlike wall time). A shorter loop than bench:lease, for working on the path.
 *
 *   node test/bench/exec-cpu.bench.mjs [--calls N] [--clients N] [--warmup N] [--json]
 *                                      [--profile DIR] [--node-options "FLAGS"]
 *
 * --calls N          calls per path and way (default 2000): one client, then --clients at once
 * --clients N        concurrent clients for the second way (default 8)
 * --warmup N         calls per path before anything is counted (default 2000: hot code)
 * --profile DIR      runs serve with `--cpu-prof` and writes its profile into DIR (open it in
 *                    Chrome's DevTools, Performance panel)
 * --node-options S   NODE_OPTIONS for serve (e.g. "--max-semi-space-size=4")
 * --json             one JSON object on stdout instead of the text
 *
 * Needs the built CLI, Postgres (127.0.0.1:5432, db test), Redis (127.0.0.1:6379) and the
 * Docker engine with sandpool/sandbox:dev; removes everything it made.
 */
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { createClient } from "./lib/client.mjs";
import { formatBreakdown, measureExecCpu } from "./lib/exec-cpu.mjs";
import { waitForRefill } from "./lib/gateway-metrics.mjs";
import { installCleanupHandlers, onCleanup, runBench } from "./lib/process.mjs";
import { startRelay } from "./lib/relay-process.mjs";
import { startSandboxContainers } from "./lib/sandbox-container.mjs";
import { createServeDeployment, execBenchConfig, serveBackendsAvailable } from "./lib/serve-deployment.mjs";
import { progress } from "./lib/timing.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url);

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "2000" },
    clients: { type: "string", default: "8" },
    warmup: { type: "string", default: "2000" },
    profile: { type: "string" },
    "node-options": { type: "string" },
    json: { type: "boolean", default: false },
  },
});
const SANDBOX_IMAGE = "sandpool/sandbox:dev";
const calls = Number(values.calls);
const clients = Number(values.clients);
const warmup = Number(values.warmup);
if (!Number.isSafeInteger(calls) || calls < 1)
  throw new Error(`--calls must be a positive integer, got ${values.calls}`);
if (!Number.isSafeInteger(warmup) || warmup < 0)
  throw new Error(`--warmup must be a non-negative integer, got ${values.warmup}`);
if (!Number.isSafeInteger(clients) || clients < 1)
  throw new Error(`--clients must be a positive integer, got ${values.clients}`);

async function main() {
  installCleanupHandlers();
  if (!(await serveBackendsAvailable())) {
    throw new Error("serve needs Postgres at 127.0.0.1:5432 (db test) and Redis at 127.0.0.1:6379");
  }
  const loadStart = loadavg()[0];
  const deployment = await createServeDeployment(execBenchConfig(clients));
  const unregister = onCleanup(() => deployment.close());
  try {
    await deployment.migrate();
    const nodeOptions = values["node-options"];
    const serve = await deployment.startGateway(
      undefined,
      nodeOptions ? { NODE_OPTIONS: nodeOptions } : {},
      values.profile ? ["--cpu-prof", "--cpu-prof-interval=100", `--cpu-prof-dir=${values.profile}`] : [],
    );
    // The baseline's sandboxes are containers as serve runs them (their per-call work is not
    // the gateway's), one per client as serve gives each session its own.
    const sandbox = await startSandboxContainers(SANDBOX_IMAGE, clients, 60_000);
    const relay = await startRelay(sandbox.urls.join(","), 60_000);
    progress("serve, relay and sandbox container ready");
    const figures = await measureExecCpu(
      [
        { name: "direct", url: sandbox.url, urls: sandbox.urls, pid: sandbox.pid, pids: sandbox.pids },
        { name: "relay", url: relay.url, pid: relay.pid },
        {
          name: "serve",
          url: serve.url,
          token: await deployment.token("bench-cpu"),
          pid: serve.pid,
          settle: async () => {
            const metrics = createClient(serve.url);
            await waitForRefill(metrics, clients + 1).finally(() => metrics.close());
          },
        },
      ],
      { calls, clients, warmup },
    );
    await relay.stop();
    await sandbox.stop();
    const result = {
      machine: { node: process.version, cpus: cpus().length, loadStart, loadEnd: loadavg()[0] },
      calls,
      clients,
      nodeOptions: nodeOptions || undefined,
      cpuUsPerExec: figures,
      serveOwnUsPerExec: {
        sequential: figures.serve.sequentialUs - figures.relay.sequentialUs,
        concurrent: figures.serve.concurrentUs - figures.relay.concurrentUs,
      },
      /** The gateway's own exec work: its p50 latency one call at a time less the relay's. */
      serveOwnP50Ms: figures.serve.sequentialP50Ms - figures.relay.sequentialP50Ms,
    };
    if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else {
      process.stdout.write(
        `CPU per exec "print(1)" (${calls} calls; load ${loadStart.toFixed(1)} -> ${result.machine.loadEnd.toFixed(1)})\n`,
      );
      for (const [name, f] of Object.entries(figures)) {
        process.stdout.write(
          `  ${name.padEnd(7)} ${f.sequentialUs.toFixed(0).padStart(6)} us one at a time  ${f.concurrentUs.toFixed(0).padStart(6)} us with ${clients} clients` +
            `  (machine ${f.machineConcurrentUs.toFixed(0).padStart(5)} us)  p50 ${f.sequentialP50Ms.toFixed(2)} ms\n`,
        );
      }
      process.stdout.write(
        `  serve beyond the relay: ${result.serveOwnUsPerExec.sequential.toFixed(0)} / ${result.serveOwnUsPerExec.concurrent.toFixed(0)} us, ` +
          `p50 +${result.serveOwnP50Ms.toFixed(2)} ms\n`,
      );
      process.stdout.write(
        `  serve's handlers, one at a time: ${formatBreakdown(figures.serve.breakdownMs)}\n`,
      );
    }
  } finally {
    unregister();
    await deployment.close();
  }
}

await runBench(main);
