/**
 * What `serve` checks before it trusts the docker runtime's isolation, and the live probe it
 * runs once the runtime is up. Sandboxes have no network and are reached through a Unix
 * socket in a directory that the gateway and the engine share, so:
 * - every engine must be on this host (a unix:// socket): a remote engine's sandboxes would
 *   have their sockets on another machine;
 * - the socket directory must be the gateway's to create and write;
 * - the gateway must not run as the sandboxes' user, or a sandbox could unseal its directory;
 * - and then a real sandbox must show, from inside, that it has no network interface but
 *   loopback and cannot write to its sealed socket directory, and answer through its socket.
 */
import { constants } from "node:fs";
import { access, mkdir } from "node:fs/promises";
import type { SandboxClient } from "../../forward/sandbox-client.js";
import type { PoolSpec } from "../sandbox-runtime.js";
import type { DockerRuntime } from "./docker-runtime.js";
import { parseDockerHost } from "./docker-runtime-options.js";

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

/** Prints the network interfaces, then whether the sealed socket directory took a write. */
const PROBE = [
  "import socket",
  "print(','.join(sorted(n for _, n in socket.if_nameindex())))",
  "try:",
  "    open('/run/sandpool/probe', 'w').close()",
  "    print('written')",
  "except OSError:",
  "    print('sealed')",
].join("\n");

/**
 * Starts one sandbox of `pool`, asks it which network interfaces it has, and destroys it.
 * Resolves when it has loopback alone; throws, saying what it saw, otherwise.
 */
export async function probeIsolation(
  runtime: DockerRuntime,
  client: SandboxClient,
  pool: PoolSpec,
  timeoutMs: number,
): Promise<void> {
  const sandboxId = `probe${Date.now().toString(16).padStart(19, "0")}`;
  const started = await runtime.start({ sandboxId, pool, deadline: Date.now() + timeoutMs });
  try {
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
    if (answer.status !== 200 || typeof stdout !== "string" || stdout.trim() !== "lo\nsealed") {
      throw new Error(
        `a probe sandbox of pool ${pool.name} has network interfaces other than loopback, or could ` +
          "write to its sealed socket directory (a mount that ignores file modes?), or could not tell " +
          `(HTTP ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)})`,
      );
    }
  } finally {
    await runtime.destroy(started.runtimeId);
  }
}
