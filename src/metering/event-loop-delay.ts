/**
 * How late the gateway's event loop runs what is due, as a Prometheus histogram:
 * `sandpool_event_loop_delay_seconds`. A timer due every 20 ms records how much later than
 * that it ran. Every call waits that long on top of its own work, and so does every reply
 * from Redis: a loop stalled past the store's command timeout turns a healthy Redis into
 * 503 `store.unavailable`, which is what this is there to show (alert on the share of
 * samples above 0.1 s, or on `histogram_quantile(0.99, ...)`).
 *
 * A sampler of its own rather than perf_hooks.monitorEventLoopDelay (which prom-client's
 * default metrics already export as `sandpool_nodejs_eventloop_lag_*`): that one's figures
 * are quantiles since its last reset and drop the sample that spans a reset, so a stall
 * right after a scrape is never seen; a histogram keeps every sample and adds up across
 * replicas.
 */
import { performance } from "node:perf_hooks";
import { Histogram, type Registry } from "prom-client";

const INTERVAL_MS = 20;

export interface EventLoopDelay {
  stop(): void;
}

export function recordEventLoopDelay(registry: Registry): EventLoopDelay {
  const histogram = new Histogram({
    name: "sandpool_event_loop_delay_seconds",
    help: "How much later than due the event loop ran a timer due every 20 ms",
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  let due = performance.now() + INTERVAL_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    histogram.observe(Math.max(0, now - due) / 1000);
    due = now + INTERVAL_MS;
  }, INTERVAL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
