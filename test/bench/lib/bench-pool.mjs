/** A pool spec and sandbox ids for benches that drive the Docker runtime directly. */

/** A pool of one image at one isolation level, started on demand only (minIdle 0). */
export const benchPool = ({ isolation, image, maxTotal }) => ({
  name: `bench-${isolation}`,
  image,
  resourceClass: "standard",
  minIdle: 0,
  maxTotal,
  warmupConcurrency: 1,
  coldStartTimeoutMs: 60_000,
  isolation,
});

/** Ids unique to this process, short enough for the socket paths they name. */
export function benchSandboxIds(prefix) {
  let serial = 0;
  return () => `${prefix}${process.pid.toString(16)}${(serial++).toString(16).padStart(8, "0")}`.slice(0, 24);
}
