/**
 * What the benches read from a gateway's Prometheus text: pool gauges, lease and request
 * counts, and the parts of an Execute (the sandbox's wall time, the store's begin).
 */
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
    reusedLeases: value(
      /^sandpool_lease_duration_seconds_count\{(?=[^}]*pool="default")[^}]*start="reused"[^}]*\} (\S+)$/m,
    ),
    coldLeases: value(
      /^sandpool_lease_duration_seconds_count\{(?=[^}]*pool="default")[^}]*start="cold"[^}]*\} (\S+)$/m,
    ),
    // Seconds spent leasing, by how: where a slow CreateSession waited (bench:churn's progress).
    reusedLeaseSeconds: value(
      /^sandpool_lease_duration_seconds_sum\{(?=[^}]*pool="default")[^}]*start="reused"[^}]*\} (\S+)$/m,
    ),
    warmLeaseSeconds: value(
      /^sandpool_lease_duration_seconds_sum\{(?=[^}]*pool="default")[^}]*start="warm"[^}]*\} (\S+)$/m,
    ),
    coldLeaseSeconds: value(
      /^sandpool_lease_duration_seconds_sum\{(?=[^}]*pool="default")[^}]*start="cold"[^}]*\} (\S+)$/m,
    ),
    createCount: value(/^sandpool_http_request_duration_seconds_count\{route="CreateSession"\} (\S+)$/m),
    createSeconds: value(/^sandpool_http_request_duration_seconds_sum\{route="CreateSession"\} (\S+)$/m),
    // Answered within 50 ms by the gateway's own clock (bench:churn's target for the client's p99).
    createWithin50ms: value(
      /^sandpool_http_request_duration_seconds_bucket\{(?=[^}]*route="CreateSession")[^}]*le="0.05"[^}]*\} (\S+)$/m,
    ),
    deleteCount: value(/^sandpool_http_request_duration_seconds_count\{route="DestroySession"\} (\S+)$/m),
    deleteSeconds: value(/^sandpool_http_request_duration_seconds_sum\{route="DestroySession"\} (\S+)$/m),
    execCount: value(/^sandpool_http_request_duration_seconds_count\{route="Execute"\} (\S+)$/m),
    execSeconds: value(/^sandpool_http_request_duration_seconds_sum\{route="Execute"\} (\S+)$/m),
    // The sandbox's part of each `print(1)` and the store's begin of it (bench execs only).
    sandboxCount: value(/^sandpool_exec_duration_seconds_count\{tool="code_execution"\} (\S+)$/m),
    sandboxSeconds: value(/^sandpool_exec_duration_seconds_sum\{tool="code_execution"\} (\S+)$/m),
    beginCount: value(/^sandpool_call_begin_duration_seconds_count (\S+)$/m),
    beginSeconds: value(/^sandpool_call_begin_duration_seconds_sum (\S+)$/m),
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

/**
 * Where a gateway's time per Execute went between two readings (ms, means): in its handlers
 * (`handler`, from the request's first middleware to the answer handed to Node), of which
 * the sandbox's wall time (`sandbox`) and the store's begin of the call (`storeBegin`); the
 * rest (`gateway`) is its own code.
 */
export function execBreakdownMs(before, after) {
  const handler = serverMeanMs(before, after, "execCount", "execSeconds");
  const sandbox = serverMeanMs(before, after, "sandboxCount", "sandboxSeconds");
  const storeBegin = serverMeanMs(before, after, "beginCount", "beginSeconds");
  return { handler, sandbox, storeBegin, gateway: handler - sandbox - storeBegin };
}
