/**
 * CreateSession measures on a running gateway: single warm leases on a full, quiet pool,
 * bursts, cold leases on an empty pool, and warm leases while the pool refills (creates
 * spaced so the replacements of the ones before are starting meanwhile).
 */
import { CALL_TIMEOUT_MS, createClient, createSession, destroySession } from "./client.mjs";
import { readMetrics, serverMeanMs, waitForRefill } from "./gateway-metrics.mjs";
import { nowMs, progress, withTimeout } from "./timing.mjs";

const WARM_UNTIMED = 2; // untimed rounds before each warm series
/** Cold creates made first and not timed. */
export const COLD_UNTIMED = 1;
const SETTLE_MS = 250;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `rounds` rounds of `burst` creates in a row on a full, quiet pool; each round by one
 * workspace. Returns each create's time, the times by place in the burst, and the gateway's
 * own count of warm and cold leases and mean CreateSession time over the timed rounds.
 */
export async function measureWarm(gateway, clients, { rounds, burst, label, minIdle }) {
  const metrics = createClient(gateway.url);
  const samples = [];
  const byPosition = Array.from({ length: burst }, () => []);
  try {
    let before;
    for (let round = 0; round < WARM_UNTIMED + rounds; round++) {
      await waitForRefill(metrics, minIdle);
      // Sandboxes that just became ready may still be settling; let the machine go quiet.
      await sleep(SETTLE_MS);
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
export async function measureCold(gateway, clients, leases) {
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
      await sleep(100);
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

/**
 * Warm leases while the pool refills: one create every `spacingMs`, each session destroyed
 * at once, so the sandboxes replacing the ones leased before start while the next creates
 * are served (the measure: creates 300 ms apart). Starts on a full, quiet pool.
 */
export async function measureDuringRefill(gateway, clients, { leases, spacingMs, minIdle, label }) {
  const metrics = createClient(gateway.url);
  const samples = [];
  try {
    await waitForRefill(metrics, minIdle);
    await sleep(SETTLE_MS);
    const before = await readMetrics(metrics);
    let next = nowMs();
    for (let i = 0; i < leases; i++) {
      const wait = next - nowMs();
      if (wait > 0) await sleep(wait);
      next += spacingMs;
      const client = clients[i % clients.length];
      const start = nowMs();
      const sessionId = await withTimeout(createSession(client), CALL_TIMEOUT_MS, `${label} create`);
      samples.push(nowMs() - start);
      await destroySession(client, sessionId);
      if ((i + 1) % 20 === 0) progress(`${label}: ${i + 1}/${leases}`);
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
