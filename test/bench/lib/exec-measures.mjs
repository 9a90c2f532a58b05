/**
 * Exec measures across paths (a path: a base URL, a token, a way to make a session there):
 * the latency of `print(1)` one call at a time, call by call across the paths in a new order
 * every round so none always follows another, and the throughput of 8 concurrent clients,
 * each with a session and a connection of its own, path after path in alternating order.
 */
import fc from "fast-check";
import { createClient, createSession, destroySession, execEach, execPrintOne } from "./client.mjs";
import { nowMs, progress } from "./timing.mjs";

/** The same orders run after run, so two runs of a bench time the same sequence. */
const LATENCY_ORDER_SEED = 13;

/** One client and one session per path; `calls` rounds of one call per path, in random orders. */
export async function measureExecLatency(paths, { warmup, calls }) {
  const opened = [];
  try {
    for (const path of paths) {
      const client = createClient(path.url, path.token);
      opened.push({ path, client, sessionId: await (path.session ?? createSession)(client) });
    }
    for (let i = 0; i < warmup; i++) for (const o of opened) await execPrintOne(o.client, o.sessionId);
    const samples = Object.fromEntries(paths.map((path) => [path.name, []]));
    // One seeded order of the paths per round (fast-check's shuffles, as the property tests use).
    const orders = fc.sample(fc.shuffledSubarray(opened, { minLength: opened.length }), {
      seed: LATENCY_ORDER_SEED,
      numRuns: calls,
    });
    for (let i = 0; i < calls; i++) {
      // A new order every round: each path follows every other alike. A rotation keeps the
      // cycle, so a path would nearly always follow the same one, and what ran just before a
      // call (its processes' neighbours in the CPU's caches, the CPUs awake or halted) weighs
      // on it: the order itself would favour one path over another.
      for (const o of orders[i]) {
        const start = nowMs();
        await execPrintOne(o.client, o.sessionId);
        samples[o.path.name].push(nowMs() - start);
      }
      if ((i + 1) % 100 === 0) progress(`exec latency: ${i + 1}/${calls} rounds`);
    }
    return samples;
  } finally {
    for (const o of opened) {
      await destroySession(o.client, o.sessionId).catch(() => undefined);
      await o.client.close();
    }
  }
}

/**
 * `clients` concurrent clients per path, each calling as fast as it is answered for
 * `durationMs` (at most `maxCallsPerClient` calls), in `rounds` rounds whose path order
 * alternates, once every client has made `warmupPerClient` calls and every path has
 * settled (`settle()`: a gateway's pool refilled). Returns exec/s per path over all its rounds.
 *
 * The warm-up is per client because each client's session has a sandbox of its own on some
 * paths (serve's fresh pool containers), and a sandbox server's code takes a few thousand
 * calls to reach the JIT's optimised tiers (its CPU per call halves meanwhile): without it,
 * a path whose sandboxes served other paths' calls before would be timed against cold ones.
 */
export async function measureThroughput(
  paths,
  { clients, durationMs, maxCallsPerClient, rounds, warmupPerClient = 0 },
) {
  const opened = [];
  try {
    for (const path of paths) {
      const workers = [];
      for (let i = 0; i < clients; i++) {
        // A path of several sandbox servers (`urls`) gives each client one of its own.
        const client = createClient(path.urls?.[i % path.urls.length] ?? path.url, path.token);
        workers.push({ client, sessionId: await (path.session ?? createSession)(client) });
      }
      await execEach(workers, Math.max(1, warmupPerClient));
      opened.push({ path, workers, calls: 0, ms: 0 });
    }
    // A gateway's pool refills behind the sessions just leased: Docker calls and container
    // starts that are not an exec's work, over before any round is timed.
    for (const o of opened) await o.path.settle?.();
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? opened : [...opened].reverse();
      for (const o of order) {
        const start = nowMs();
        const until = start + durationMs;
        const counts = await Promise.all(
          o.workers.map(async (w) => {
            let n = 0;
            while (n < maxCallsPerClient && nowMs() < until) {
              await execPrintOne(w.client, w.sessionId);
              n++;
            }
            return n;
          }),
        );
        o.ms += nowMs() - start;
        o.calls += counts.reduce((a, b) => a + b, 0);
      }
      progress(`exec throughput: round ${round + 1}/${rounds}`);
    }
    return Object.fromEntries(opened.map((o) => [o.path.name, (o.calls / o.ms) * 1000]));
  } finally {
    for (const o of opened) {
      for (const w of o.workers) {
        await destroySession(w.client, w.sessionId).catch(() => undefined);
        await w.client.close();
      }
    }
  }
}
