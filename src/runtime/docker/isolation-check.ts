/**
 * What `serve` checks before it trusts the docker runtime's isolation, and the live probe it
 * runs once the runtime is up. Sandboxes have no network and are reached through a Unix
 * socket in a directory that the gateway and the engine share, so:
 * - every engine must be on this host (a unix:// socket): a remote engine's sandboxes would
 *   have their sockets on another machine;
 * - the socket directory must be the gateway's to create and write;
 * - the gateway must not run as the sandboxes' user, or a sandbox could unseal its directory;
 * - every engine must have the OCI runtime each pool's isolation needs (gVisor's for a gvisor
 *   pool), or a start would fail on every lease;
 * - and then a real sandbox of each isolation level must show, from inside, that it has no
 *   network interface but loopback and cannot write to its sealed socket directory (and, in a
 *   gvisor pool, that its kernel is gVisor's), and answer through its socket.
 */
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { access, mkdir } from "node:fs/promises";
import type { SandboxClient } from "../../forward/sandbox-client.js";
import type { Isolation } from "../../policy-schema/isolation-levels.js";
import type { PoolSpec } from "../sandbox-runtime.js";
import type { DockerRuntime } from "./docker-runtime.js";
import type { EngineRuntimes } from "./docker-runtime-answers.js";
import { parseDockerHost } from "./docker-runtime-options.js";
import { SandboxStartError } from "./wait-for-sandbox-health.js";

/**
 * runsc's arguments as sandpool registers it (scripts/start-docker.sh, docs/isolation.md): the
 * ptrace platform (no /dev/kvm needed), no network of its own, and host Unix sockets that the
 * sandbox may create (its server's) but not connect to.
 */
export const GVISOR_RUNTIME_ARGS = ["--platform=ptrace", "--network=none", "--host-uds=create"];

export interface IsolationSettings {
  hosts: string[];
  socketDir: string;
  /** The sandboxes' `uid:gid`. */
  user: string;
}

/** Problems that need no engine to see; empty when none. */
export function isolationProblems(settings: IsolationSettings, gatewayUid = process.getuid?.()): string[] {
  const problems: string[] = [];
  for (const host of settings.hosts) {
    if (parseDockerHost(host)?.kind !== "unix") {
      problems.push(
        `runtime.docker.hosts: ${host} is a remote engine. Sandboxes have no network and are reached ` +
          "through a Unix socket in runtime.docker.socketDir on the engine's own host, which a remote " +
          "engine's sandboxes are not; run sandpool on that host instead (the node role will serve remote hosts)",
      );
    }
  }
  const sandboxUid = Number(settings.user.split(":")[0]);
  if (gatewayUid !== undefined && gatewayUid === sandboxUid) {
    problems.push(
      `the gateway runs as uid ${gatewayUid}, the sandboxes' user (runtime.docker.user): a sandbox could ` +
        "reopen its sealed socket directory. Run the gateway as another user",
    );
  }
  return problems;
}

/** What a runtime's refusal tells the operator to add: the daemon.json lines, and where. */
function registerHint(name: string): string {
  const entry = JSON.stringify({
    runtimes: { [name]: { path: "/usr/bin/runsc", runtimeArgs: GVISOR_RUNTIME_ARGS } },
  });
  return (
    `add to the engine's /etc/docker/daemon.json ${entry.slice(1, -1)} and reload dockerd (kill -HUP <dockerd pid>); ` +
    "scripts/start-docker.sh does it with Debian's runsc (docs/isolation.md)"
  );
}

/**
 * Each engine must have the runtime each pool's isolation runs on: gVisor's for a gvisor
 * pool, runtime.docker.runtime (when set) for a container pool. Empty when all do.
 */
export function missingRuntimeProblems(
  engines: readonly EngineRuntimes[],
  pools: readonly Pick<PoolSpec, "name" | "isolation">[],
  settings: { gvisorRuntime: string; runtime?: string | undefined },
): string[] {
  const needed = new Map<string, string[]>();
  for (const pool of pools) {
    const name = pool.isolation === "gvisor" ? settings.gvisorRuntime : settings.runtime;
    if (name !== undefined) needed.set(name, [...(needed.get(name) ?? []), pool.name]);
  }
  const problems: string[] = [];
  for (const engine of engines) {
    if (engine.runtimes === undefined) {
      if (needed.size > 0)
        problems.push(
          `runtime.docker.hosts: ${engine.host} did not say its runtimes (${engine.problem ?? "no answer"})`,
        );
      continue;
    }
    for (const [name, pools] of needed) {
      if (engine.runtimes[name] !== undefined) continue;
      const gvisor = name === settings.gvisorRuntime;
      problems.push(
        `runtime.docker.hosts: ${engine.host} has no OCI runtime '${name}' (it has: ${Object.keys(engine.runtimes).join(", ")}), ` +
          `which pool(s) ${pools.join(", ")} run on` +
          (gvisor ? ` (isolation: gvisor): ${registerHint(name)}` : " (runtime.docker.runtime)"),
      );
    }
  }
  return problems;
}

/** The isolation levels every engine of the runtime offers: gvisor where all have its runtime. */
export async function offeredIsolation(runtime: DockerRuntime): Promise<Isolation[]> {
  const engines = await runtime.registeredRuntimes();
  const gvisor =
    engines.length > 0 &&
    engines.every((engine) => engine.runtimes?.[runtime.options.gvisorRuntime] !== undefined);
  return gvisor ? ["container", "gvisor"] : ["container"];
}

/** The socket directory can be made and written by this process, or why not. */
export async function socketDirProblem(socketDir: string): Promise<string | undefined> {
  try {
    await mkdir(socketDir, { recursive: true, mode: 0o700 });
    await access(socketDir, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (error) {
    return (
      `runtime.docker.socketDir ${socketDir} cannot be made or written by this process ` +
      `(${(error as NodeJS.ErrnoException).code ?? String(error)}): create it for the gateway's user`
    );
  }
}

/**
 * Prints the network interfaces, whether the sealed socket directory took a write, and whose
 * kernel answers: gVisor's kernel log (readable by any user there, refused to one on the
 * host's kernel) starts with "Starting gVisor".
 */
const PROBE = [
  "import ctypes, socket",
  "print(','.join(sorted(n for _, n in socket.if_nameindex())))",
  "try:",
  "    open('/run/sandpool/probe', 'w').close()",
  "    print('written')",
  "except OSError:",
  "    print('sealed')",
  "log = ctypes.create_string_buffer(4096)",
  "size = ctypes.CDLL(None).klogctl(3, log, 4096)",
  "print('gvisor' if size > 0 and b'Starting gVisor' in log.raw[:size] else 'host')",
].join("\n");

/**
 * Starts one sandbox of `pool`, asks it which network interfaces it has and whose kernel runs
 * it, and destroys it. Resolves when it has loopback alone (and, in a gvisor pool, runs on
 * gVisor); throws, saying what it saw, otherwise. Every step is bounded by `timeoutMs`.
 */
export async function probeIsolation(
  runtime: DockerRuntime,
  client: SandboxClient,
  pool: PoolSpec,
  timeoutMs: number,
): Promise<void> {
  // Random, not the time alone: replicas starting together probe at once, and two probes of
  // one id share (and clear) one socket directory and container name.
  const sandboxId = `probe${randomBytes(19).toString("hex").slice(0, 19)}`;
  const isolation: Isolation = pool.isolation ?? "container";
  let started: Awaited<ReturnType<DockerRuntime["start"]>>;
  try {
    started = await runtime.start({ sandboxId, pool, deadline: Date.now() + timeoutMs });
  } catch (error) {
    // gVisor keeps a socket made inside to itself unless runsc may create host sockets: the
    // server listens, and the host never sees its socket.
    if (isolation === "gvisor" && error instanceof SandboxStartError && /no socket yet/.test(error.message))
      throw new Error(
        `${error.message}: its server's socket never appeared on the host; runsc needs --host-uds=create ` +
          `(or all) in the engine's runtimeArgs (${registerHint(runtime.options.gvisorRuntime)})`,
      );
    throw error;
  }
  try {
    if (isolation === "gvisor") {
      const oci = await runtime.runtimeOf(started.runtimeId);
      if (oci !== runtime.options.gvisorRuntime)
        throw new Error(
          `a probe sandbox of pool ${pool.name} runs on the OCI runtime '${oci}', not '${runtime.options.gvisorRuntime}'`,
        );
    }
    const session = await client.createInnerSession(started.endpoint, timeoutMs);
    const answer = await client.json(started.endpoint, {
      method: "POST",
      path: `/sessions/${encodeURIComponent(session)}/exec`,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool: "code_execution", input: { code: PROBE } }),
      timeoutMs,
    });
    const stdout = (answer.body as { result_block?: { content?: { stdout?: unknown } } } | undefined)
      ?.result_block?.content?.stdout;
    const [interfaces, socketDir, kernel] = typeof stdout === "string" ? stdout.trim().split("\n") : [];
    if (answer.status !== 200 || interfaces !== "lo" || socketDir !== "sealed") {
      throw new Error(
        `a probe sandbox of pool ${pool.name} has network interfaces other than loopback, or could ` +
          "write to its sealed socket directory (a mount that ignores file modes?), or could not tell " +
          `(HTTP ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)})`,
      );
    }
    if (isolation === "gvisor" && kernel !== "gvisor") {
      throw new Error(
        `a probe sandbox of pool ${pool.name} (isolation: gvisor) does not run on gVisor's kernel: ` +
          `its kernel log does not start with "Starting gVisor" (it printed ${JSON.stringify(stdout).slice(0, 200)})`,
      );
    }
  } finally {
    await runtime.destroy(started.runtimeId);
  }
}
