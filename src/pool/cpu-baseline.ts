/**
 * A new sandbox's CPU time once it is ready: what its server's start-up burned, which no
 * session is charged for (the CPU meter charges from here). Read with a short bound: a
 * runtime that cannot answer at once (Docker's stats API samples for a second) leaves it
 * unknown, and the session's first meter reading is its baseline instead.
 */
import type { SandboxRuntime } from "../runtime/sandbox-runtime.js";

const BASELINE_TIMEOUT_MS = 250;

export async function cpuBaselineMs(
  runtime: Pick<SandboxRuntime, "usage">,
  runtimeId: string,
  timeoutMs = BASELINE_TIMEOUT_MS,
): Promise<number | undefined> {
  if (!runtime.usage) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs);
  });
  try {
    const usage = await Promise.race([runtime.usage(runtimeId).catch(() => undefined), timeout]);
    return usage === undefined ? undefined : Math.floor(usage.cpuSeconds * 1000);
  } finally {
    clearTimeout(timer);
  }
}
