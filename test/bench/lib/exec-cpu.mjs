/**
 * The CPU each process on an exec path spends per `print(1)`, a figure the machine's load
 * hardly moves (wall-time latency on a shared machine is mostly waiting for a CPU): for each
 * path with a `pid` (the process in front of the sandbox: the relay, a gateway; or the
 * sandbox server itself for the direct path), a fixed number of calls from one client, then
 * the same number from `clients` concurrent clients, each reading the process's CPU time
 * before and after (cpu-time.mjs, less its idle rate), after `warmup` calls from every client
 * that bring the path's code, each client's sandbox's included, to the JIT's optimised tiers.
 * A path's `settle()` (a gateway's pool refilled after the sessions were leased) runs before
 * anything is counted: a refill's Docker calls and health polls are not an exec's work.
 */
import { createClient, createSession, destroySession, execEach, execPrintOne } from "./client.mjs";
import { cpuSpentOn, machineBusyMs } from "./cpu-time.mjs";
import { execBreakdownMs, readMetrics } from "./gateway-metrics.mjs";
import { percentile } from "./stats.mjs";
import { progress } from "./timing.mjs";

/**
 * `{ [path]: { sequentialUs, concurrentUs, machineConcurrentUs, sequentialP50Ms } }`: CPU
 * microseconds per exec of the path's process, one call at a time and with `clients` calling
 * at once (`calls` calls each way), the whole machine's with `clients` calling (every process
 * on the path and the kernel: what bounds its throughput once every CPU is in use), and the
 * p50 latency of the calls one at a time (the gateway's own latency is what it adds beyond
 * the relay's, measured side by side in the same run).
 */
export async function measureExecCpu(paths, { calls, clients, warmup = 2_000 }) {
  const figures = {};
  for (const path of paths.filter((p) => p.pid !== undefined)) {
    // Every process of the path (several sandbox servers, one per client), summed.
    const pids = Object.fromEntries((path.pids ?? [path.pid]).map((pid, i) => [`p${i}`, pid]));
    const total = (cpuMs) => Object.values(cpuMs).reduce((a, b) => a + b, 0);
    const workers = [];
    try {
      for (let i = 0; i < clients; i++) {
        const client = createClient(path.urls?.[i % path.urls.length] ?? path.url, path.token);
        workers.push({ client, sessionId: await (path.session ?? createSession)(client) });
      }
      // Hot code, as in a gateway that has served for a while: the JIT's optimised tiers, in
      // every client's sandbox too (serve gives each session a fresh container of its own).
      const [first] = workers;
      await execEach(workers, Math.max(1, warmup));
      await path.settle?.();
      const took = [];
      // A gateway (a path with a token) says where its time went, from its own metrics.
      const metrics = path.token ? createClient(path.url) : undefined;
      const before = metrics && (await readMetrics(metrics));
      const sequential = await cpuSpentOn(pids, async () => {
        for (let i = 0; i < calls; i++) {
          const started = performance.now();
          await execPrintOne(first.client, first.sessionId);
          took.push(performance.now() - started);
        }
      });
      const breakdown = metrics && execBreakdownMs(before, await readMetrics(metrics));
      await metrics?.close();
      const perClient = Math.ceil(calls / clients);
      let machineMs = 0;
      const concurrent = await cpuSpentOn(pids, async () => {
        const busyBefore = await machineBusyMs();
        await Promise.all(
          workers.map(async (w) => {
            for (let i = 0; i < perClient; i++) await execPrintOne(w.client, w.sessionId);
          }),
        );
        machineMs = (await machineBusyMs()) - busyBefore;
      });
      figures[path.name] = {
        sequentialUs: (total(sequential.cpuMs) * 1000) / calls,
        concurrentUs: (total(concurrent.cpuMs) * 1000) / (perClient * clients),
        /** The whole machine's busy CPU per exec with `clients` calling (every process, the kernel). */
        machineConcurrentUs: (machineMs * 1000) / (perClient * clients),
        sequentialP50Ms: percentile(took, 50),
        ...(breakdown ? { breakdownMs: breakdown } : {}),
      };
      progress(
        `exec CPU, ${path.name}: ${figures[path.name].sequentialUs.toFixed(0)} us/exec one at a time, ` +
          `${figures[path.name].concurrentUs.toFixed(0)} us/exec with ${clients} clients, ` +
          `the whole machine ${figures[path.name].machineConcurrentUs.toFixed(0)} ` +
          `(latency one at a time: p50 ${figures[path.name].sequentialP50Ms.toFixed(2)} ms)`,
      );
      if (breakdown) progress(`exec time in ${path.name}'s handlers: ${formatBreakdown(breakdown)}`);
    } finally {
      for (const w of workers) {
        await destroySession(w.client, w.sessionId).catch(() => undefined);
        await w.client.close();
      }
    }
  }
  return figures;
}

/** `1.05 ms per exec: sandbox 0.68, store begin 0.19, gateway 0.18` */
export function formatBreakdown(b) {
  return (
    `${b.handler.toFixed(2)} ms per exec: sandbox ${b.sandbox.toFixed(2)}, ` +
    `store begin ${b.storeBegin.toFixed(2)}, gateway ${b.gateway.toFixed(2)}`
  );
}
