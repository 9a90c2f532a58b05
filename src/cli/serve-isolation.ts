/**
 * `serve` runs sandboxes only where their isolation holds, and checks it before serving: the
 * checks that need nothing (remote engines, the gateway's user), the socket directory, and a
 * live probe sandbox (isolation-check.ts). Any failure stops the start, naming what is wrong.
 */
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { ConfigError } from "../config/load-config.js";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { DockerRuntime } from "../runtime/docker/docker-runtime.js";
import { isolationProblems, probeIsolation, socketDirProblem } from "../runtime/docker/isolation-check.js";

const PROBE_TIMEOUT_MS = 60_000;

/** Refuses, before any backend is contacted, what cannot be isolated. */
export async function assertIsolationPossible(runtime: DockerRuntime, source: string): Promise<void> {
  const problems = isolationProblems(runtime.options);
  const socketDir = await socketDirProblem(runtime.socketDirs.root);
  if (socketDir) problems.push(socketDir);
  if (problems.length > 0) throw new ConfigError(problems, source);
}

/** A probe sandbox of the default image's pool must have loopback alone. */
export async function assertIsolationHolds(
  runtime: DockerRuntime,
  client: SandboxClient,
  config: GatewayConfig,
  log: Logger,
): Promise<void> {
  const pool =
    config.pools.find((p) => p.image === config.policy.defaultImage && !p.egress) ?? config.pools[0]!;
  const began = Date.now();
  try {
    await probeIsolation(runtime, client, pool, PROBE_TIMEOUT_MS);
  } catch (error) {
    throw new Error(
      `serve refuses to start: sandbox isolation could not be verified with a probe of pool ${pool.name} ` +
        `(${error instanceof Error ? error.message : String(error)})`,
    );
  }
  log.info(
    { pool: pool.name, ms: Date.now() - began },
    "isolation verified: a probe sandbox has loopback alone",
  );
}
