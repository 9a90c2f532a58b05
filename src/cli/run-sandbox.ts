/** Runs the sandbox server in the foreground until SIGINT/SIGTERM. */
import { createLogger } from "../logging/create-logger.js";
import { startSandboxServer } from "../sandbox/start-sandbox-server.js";
import { onShutdown } from "./on-shutdown.js";
import { printReady } from "./ready-line.js";

export async function runSandbox(options: Record<string, unknown>): Promise<void> {
  const log = createLogger("sandbox");
  const server = await startSandboxServer(
    {
      host: options.host as string,
      port: options.port as number,
      socket: options.socket as string | undefined,
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
      reapStrayProcesses: options.reapStrays === true,
      scrubDirs: (options.scrubDirs as string[] | undefined) ?? [],
      codeUser: options.codeUser as { uid: number; gid: number } | undefined,
      codeMaxProcesses: options.codeMaxProcesses as number | undefined,
      preloadModules: (options.preloadModules as string[] | undefined) ?? [],
      forkInterpreters: options.forkInterpreters !== false,
      egressProxySocket: options.egressProxySocket as string | undefined,
      egressProxyPort: options.egressProxyPort as number,
    },
    log,
  );
  const stop = onShutdown(log, () => server.close());
  if (options.exitWithStdin) {
    // The parent holds our stdin open; its end means the parent is gone.
    process.stdin.on("close", () => stop("stdin closed"));
    process.stdin.on("end", () => stop("stdin closed"));
    process.stdin.resume();
  }
  // Only now that shutdown is handled: whoever waits for this line may signal at once.
  printReady(options.json === true, [`sandpool sandbox listening on ${server.url}`], { url: server.url });
  log.info({ url: server.url }, "sandbox server ready");
}
