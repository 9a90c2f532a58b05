/** Runs the sandbox server in the foreground until SIGINT/SIGTERM. */
import { createLogger } from "../logging/create-logger.js";
import { startSandboxServer } from "../sandbox/start-sandbox-server.js";

export async function runSandbox(options: Record<string, unknown>): Promise<void> {
  const log = createLogger("sandbox");
  const server = await startSandboxServer(
    {
      host: options.host as string,
      port: options.port as number,
      root: options.root as string,
      python: options.python as string,
      maxSessions: options.maxSessions as number,
      defaultIdleTimeoutSeconds: options.idleTimeout as number,
      maxIdleTimeoutSeconds: options.maxIdleTimeout as number,
      defaultMaxLifetimeSeconds: options.maxLifetime as number,
      maxLifetimeSeconds: options.maxLifetimeCeiling as number,
      defaultExecTimeoutSeconds: options.execTimeout as number,
      maxExecTimeoutSeconds: options.maxExecTimeout as number,
      maxOutputBytes: options.maxOutputBytes as number,
      maxUploadBytes: options.maxUploadBytes as number,
    },
    log,
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    await server.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
  if (options.exitWithStdin) {
    // The parent holds our stdin open; its end means the parent is gone.
    process.stdin.on("close", () => void stop("stdin closed"));
    process.stdin.on("end", () => void stop("stdin closed"));
    process.stdin.resume();
  }
  // Only now that shutdown is handled: whoever waits for this line may signal at once.
  process.stdout.write(`sandpool sandbox listening on ${server.url}\n`);
  log.info({ url: server.url }, "sandbox server ready");
}
