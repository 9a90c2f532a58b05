/** Monotonic timing helpers (milliseconds, sub-millisecond resolution). */
import { performance } from "node:perf_hooks";

export function nowMs() {
  return performance.now();
}

/** Runs `fn` and returns its result with the time it took. */
export async function timed(fn) {
  const start = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - start };
}

/**
 * Calls `fn(i)` `count` times one after another (after `warmup` untimed calls) and returns
 * the duration of each timed call. Always bounded: `count` and `warmup` are required numbers.
 */
export async function sample(count, fn, { warmup = 0 } = {}) {
  for (let i = 0; i < warmup; i++) await fn(i);
  const samples = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await fn(i);
    samples.push(performance.now() - start);
  }
  return samples;
}

/** Rejects with `message` when `promise` has not settled within `ms`. */
export function withTimeout(promise, ms, message) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} (timed out after ${ms} ms)`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** "12.3 ms", "0.412 ms", "1.23 s": a readable duration. */
export function formatMs(ms) {
  if (!Number.isFinite(ms)) return "-";
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(3)} ms`;
}

/** Writes one progress line to stderr (stdout is kept for the results). */
export function progress(message) {
  process.stderr.write(`[bench] ${message}\n`);
}
