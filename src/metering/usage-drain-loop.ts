/**
 * Runs the usage drainer (usage-drainer.ts) on every replica, every `everyMs`: one round at
 * a time, the next one after the last has finished. Any replica's drain moves any
 * workspace's records (their claims keep two from working on one workspace at once), so the
 * records of a replica that died are drained by the others.
 */
import type { Logger } from "pino";
import type { UsageDrainer } from "./usage-drainer.js";

export interface UsageDrainLoop {
  stop(): void;
}

export function startUsageDrain(
  drainer: Pick<UsageDrainer, "drain">,
  everyMs: number,
  log: Logger,
): UsageDrainLoop {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const next = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      drainer
        .drain()
        .catch((error: unknown) => log.warn({ err: error }, "usage drain round failed"))
        .finally(next);
    }, everyMs);
    timer.unref();
  };
  next();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
