/**
 * Runs `shutdown` once on SIGINT or SIGTERM (or any other trigger the caller passes to the
 * returned function), then exits: 0 when it finished, 1 when it failed or `graceMs` ran out.
 */
import type { Logger } from "pino";

export function onShutdown(
  log: Logger,
  shutdown: () => Promise<void>,
  options: { graceMs?: number } = {},
): (reason: string) => void {
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ reason, graceMs: options.graceMs }, "shutting down");
    if (options.graceMs !== undefined) {
      setTimeout(() => {
        log.warn("grace period over: exiting with work still in flight");
        process.exit(1);
      }, options.graceMs).unref();
    }
    shutdown().then(
      () => process.exit(0),
      (error) => {
        log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
  return stop;
}
