/** What the benches read from a gateway's Prometheus text: pool gauges, lease and request counts. */
import { nowMs } from "./timing.mjs";

const REFILL_TIMEOUT_MS = 120_000;

export async function readMetrics(client) {
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
export function serverMeanMs(before, after, count, seconds) {
  const n = after[count] - before[count];
  return n > 0 ? ((after[seconds] - before[seconds]) / n) * 1000 : Number.NaN;
}

/** Waits until the default pool holds `minIdle` idle sandboxes and none is starting. */
export async function waitForRefill(metricsClient, minIdle) {
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
