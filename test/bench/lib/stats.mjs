/**
 * Summary statistics for latency samples (milliseconds). Percentiles use linear
 * interpolation between closest ranks, so p50 of an even count is the mean of the middle two.
 */

/** The p-th percentile (0..100) of `samples`; NaN for an empty list. */
export function percentile(samples, p) {
  if (samples.length === 0) return Number.NaN;
  if (p < 0 || p > 100) throw new RangeError(`percentile must be within 0..100, got ${p}`);
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
}

export function median(samples) {
  return percentile(samples, 50);
}

export function mean(samples) {
  if (samples.length === 0) return Number.NaN;
  return samples.reduce((sum, x) => sum + x, 0) / samples.length;
}

/** n, min, max, mean, median (p50), p90, p99 of `samples`. */
export function summarize(samples) {
  return {
    n: samples.length,
    min: samples.length ? Math.min(...samples) : Number.NaN,
    max: samples.length ? Math.max(...samples) : Number.NaN,
    mean: mean(samples),
    median: percentile(samples, 50),
    p90: percentile(samples, 90),
    p99: percentile(samples, 99),
  };
}
