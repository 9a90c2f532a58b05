/**
 * `serve` runs sandboxes only where their isolation holds, and checks it before serving: the
 * checks that need nothing (remote engines, the gateway's user), the socket directory, the
 * engines' runtimes, and a live probe sandbox per isolation level (isolation-check.ts). Any
 * failure stops the start within seconds, naming what is wrong.
 */
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { ConfigError } from "../config/load-config.js";
import type { SandboxClient } from "../forward/sandbox-client.js";
import type { DockerRuntime } from "../runtime/docker/docker-runtime.js";
import {
  isolationProblems,
  missingRuntimeProblems,
  offeredIsolation,
  probeIsolation,
  socketDirProblem,
} from "../runtime/docker/isolation-check.js";

/**
 * Each step of a probe (the start, each call) gets this long: a sandbox starts in about a
 * second (gVisor's too), so a probe that cannot succeed fails within seconds, never hangs.
 */
const PROBE_TIMEOUT_MS = 20_000;

/** Refuses, before any backend is contacted, what cannot be isolated. */
export async function assertIsolationPossible(runtime: DockerRuntime, source: string): Promise<void> {
  const problems = isolationProblems(runtime.options);
  const socketDir = await socketDirProblem(runtime.socketDirs.root);
  if (socketDir) problems.push(socketDir);
  if (problems.length > 0) throw new ConfigError(problems, source);
}

/**
 * Every engine has the runtime each pool's isolation needs, and a probe sandbox of each
 * isolation level the pools use has loopback alone (and gVisor's kernel, for gvisor).
 */
export async function assertIsolationHolds(
  runtime: DockerRuntime,
  client: SandboxClient,
  config: GatewayConfig,
  log: Logger,
): Promise<void> {
  const missing = missingRuntimeProblems(await runtime.registeredRuntimes(), config.pools, runtime.options);
  if (missing.length > 0) {
    throw new Error(`serve refuses to start: ${missing.join("; ")}`);
  }
  for (const pool of probedPools(config)) {
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
      { pool: pool.name, isolation: pool.isolation, ms: Date.now() - began },
      `isolation verified: a probe sandbox has loopback alone${pool.isolation === "gvisor" ? " and runs on gVisor" : ""}`,
    );
  }
}

/** One pool per isolation level in use: the default image's without egress where there is one. */
function probedPools(config: GatewayConfig): GatewayConfig["pools"] {
  const levels = [...new Set(config.pools.map((pool) => pool.isolation))];
  return levels.map((level) => {
    const pools = config.pools.filter((pool) => pool.isolation === level);
    return (
      pools.find((p) => p.image === config.policy.defaultImage && !p.egress) ??
      pools.find((p) => !p.egress) ??
      pools[0]!
    );
  });
}

/**
 * A node's configuration with only the pools its engine can run: a pool whose isolation the
 * engine does not offer is left to other nodes, loudly. None left: serve refuses to start.
 */
export async function poolsThisEngineServes(
  runtime: DockerRuntime,
  config: GatewayConfig,
  log: Logger,
): Promise<GatewayConfig> {
  const offered = await offeredIsolation(runtime);
  const served = config.pools.filter((pool) => offered.includes(pool.isolation));
  const left = config.pools.filter((pool) => !offered.includes(pool.isolation));
  if (served.length === 0) {
    throw new Error(
      `serve refuses to start: this node's engine offers ${offered.join(", ")} isolation, which none of the pools (${config.pools.map((p) => p.name).join(", ")}) use`,
    );
  }
  if (left.length > 0) {
    log.warn(
      { pools: left.map((pool) => pool.name), offered },
      `this node's engine has no runtime '${runtime.options.gvisorRuntime}': its gvisor pools are left to other nodes (docs/isolation.md)`,
    );
  }
  return left.length > 0 ? { ...config, pools: served } : config;
}
