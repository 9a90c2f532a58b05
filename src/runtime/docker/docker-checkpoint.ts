/**
 * Hibernation on Docker (src/runtime/sandbox-checkpoints.ts). Found by experiment on this
 * engine (Docker 20.10, runsc 2022-12, ptrace):
 *
 * - gVisor checkpoints a sandbox whole (`POST /containers/{id}/checkpoints`) only while no
 *   socket backed by a host file is open: the server's listening socket is one
 *   (`--host-uds=create`). So the server stops listening first (`POST /sandbox/pause-listener`)
 *   and listens again on SIGUSR2 after the restore. A checkpoint that fails in runsc ends the
 *   sandbox, with `--leave-running` too.
 * - The engine restores only from its own checkpoint directory
 *   (`<data root>/containers/<id>/checkpoints/<name>`; `checkpoint-dir` on start is refused),
 *   so the checkpoint written to the store is copied there for the new container. That needs
 *   the engine's data root on this host: engines reached over TCP cannot restore memory.
 * - runc's checkpoint (CRIU) fails on this kernel, and the engine's archive API does not see
 *   tmpfs mounts: a plain container keeps its session's workspace as a tar made inside it by
 *   the code's uid (`tar` through exec), and gets it back the same way.
 */
import { randomBytes } from "node:crypto";
import { cp, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type Dockerode from "dockerode";
import { type Dispatcher, request } from "undici";
import { sandboxOrigin, unixEndpoint } from "../../forward/sandbox-agent.js";
import {
  type CheckpointKind,
  type CheckpointRequest,
  dockerCheckpointKindOf,
  SandboxLostInCheckpointError,
  type SavedCheckpoint,
} from "../sandbox-checkpoints.js";
import type { PoolSpec } from "../sandbox-runtime.js";
import { codeUidOf } from "./container-spec.js";
import { dockerMessageOf } from "./docker-api-errors.js";
import type { DockerEngine } from "./docker-engine.js";
import type { DockerEngines } from "./docker-engines.js";
import { execToFile, execWithInput } from "./docker-exec.js";
import type { DockerRuntimeOptions, ResourceClass } from "./docker-runtime-options.js";
import type { SocketDirs } from "./socket-dirs.js";

/** The name of every checkpoint in its directory: one checkpoint per directory. */
export const CHECKPOINT_NAME = "sandpool";
/** Written beside a memory checkpoint copied for a restore: see startFromMemoryCheckpoint. */
const RESTORE_NONCE = "sandpool-restore-nonce";
/**
 * Where the engine's containerd client copies a checkpoint it restores from
 * (`ctrd-checkpoint*`, the engine's temporary directory) and leaves the copy: a tenant's
 * memory, removed by the restore itself (removeEngineCopy).
 */
const ENGINE_TEMP_DIR = "/tmp";
const ENGINE_COPY_PREFIX = "ctrd-checkpoint";
/** A `files` checkpoint: the workspace as a tar. */
export const WORKSPACE_TAR = "workspace.tar";
/** The server closes its connections 50 ms after agreeing to pause: this leaves it room. */
const PAUSE_GRACE_MS = 300;
/** How long a server that failed to be checkpointed may take to listen again. */
const RELISTEN_WAIT_MS = 5_000;
/** A workspace's tar runs as the code's uid, which may stop it: the save gives up after this. */
const WORKSPACE_TAR_TIMEOUT_MS = 120_000;
const SIGNAL_RELISTEN = "SIGUSR2";

/** dockerode has the call; @types/dockerode does not declare it. */
type CheckpointingContainer = Dockerode.Container & {
  createCheckpoint(options: { CheckpointID: string; CheckpointDir: string; Exit: boolean }): Promise<unknown>;
};

/** Restores a container from a checkpoint instead of starting it fresh. */
export type StartFromCheckpoint = (engine: DockerEngine, container: Dockerode.Container) => Promise<void>;

export interface CheckpointHost {
  locate(runtimeId: string): { engine: DockerEngine; containerId: string } | undefined;
  socketOf(sandboxId: string): string;
  /** Removes the sandbox's socket file from its (sealed) directory. */
  removeSocket(sandboxId: string): Promise<void>;
  /** Empties the socket directory and lets the sandbox's server create its socket there again. */
  reopenSocketDir(sandboxId: string): Promise<void>;
  seal(sandboxId: string): Promise<void>;
  endpointOf(sandboxId: string): string;
  dispatcher: Dispatcher;
  sessionsRoot: string;
  /** The code's gid (runtime.docker.user's). */
  codeGid: number;
  /** Most bytes a workspace's tar may have: its tmpfs holds no more (plus tar's headers). */
  maxWorkspaceTarBytes: number;
}

export function checkpointKindOf(pool: PoolSpec): CheckpointKind | undefined {
  return dockerCheckpointKindOf(pool);
}

export async function checkpointSandbox(
  host: CheckpointHost,
  checkpoint: CheckpointRequest,
): Promise<SavedCheckpoint> {
  const located = host.locate(checkpoint.runtimeId);
  if (!located) throw new Error(`not a runtime id of a configured Docker engine: ${checkpoint.runtimeId}`);
  const { engine, containerId } = located;
  const container = engine.docker.getContainer(containerId);
  await mkdir(checkpoint.dir, { recursive: true, mode: 0o700 });
  if (checkpoint.isolation === "gvisor") {
    // Refused (an older server: 404): nothing changed. Agreed: from here on, every failure
    // with the sandbox still alive has it listen again. SIGUSR2 only after it agreed: an older
    // server has no handler, and the signal's default would end it.
    await requestPause(host, checkpoint.sandboxId);
    try {
      await sleep(PAUSE_GRACE_MS);
      await host.removeSocket(checkpoint.sandboxId);
      await engine.call(() =>
        (container as CheckpointingContainer).createCheckpoint({
          CheckpointID: CHECKPOINT_NAME,
          CheckpointDir: checkpoint.dir,
          Exit: true,
        }),
      );
    } catch (error) {
      if (await isRunning(engine, container)) {
        await listenAgain(host, engine, container, checkpoint.sandboxId).catch(() => undefined);
        throw error;
      }
      await rm(path.join(checkpoint.dir, CHECKPOINT_NAME), { recursive: true, force: true });
      throw new SandboxLostInCheckpointError(
        `gVisor's checkpoint failed and ended the sandbox: ${dockerMessageOf(error)}`,
      );
    }
    const bytes = await sizeOf(path.join(checkpoint.dir, CHECKPOINT_NAME));
    return { kind: "memory", bytes };
  }
  const file = path.join(checkpoint.dir, WORKSPACE_TAR);
  await execToFile(
    engine,
    container,
    {
      Cmd: ["tar", "-C", workspaceOf(host, checkpoint.sandboxSessionId), "-cf", "-", "."],
      User: `${codeUidOf(checkpoint.sandboxId)}:${host.codeGid}`,
    },
    file,
    { maxBytes: host.maxWorkspaceTarBytes, timeoutMs: WORKSPACE_TAR_TIMEOUT_MS },
  );
  const bytes = (await stat(file)).size;
  return { kind: "files", bytes };
}

/**
 * For a `memory` restore: copies the checkpoint into the engine's own directory for the new
 * container, starts the container from it and has the server listen again.
 */
export function startFromMemoryCheckpoint(
  dataRoot: (engine: DockerEngine) => Promise<string>,
  dir: string,
): StartFromCheckpoint {
  return async (engine, container) => {
    const target = path.join(
      await dataRoot(engine),
      "containers",
      container.id,
      "checkpoints",
      CHECKPOINT_NAME,
    );
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    await cp(path.join(dir, CHECKPOINT_NAME), target, { recursive: true });
    // The engine uploads the checkpoint to containerd's content store as a tar of this
    // directory, and fails when containerd still holds a blob of that digest ("commit failed:
    // content sha256:... already exists"; it keeps the one it made at the checkpoint until its
    // garbage collection). A file of random bytes beside it (runsc reads only its own) makes
    // every upload's digest new.
    const nonce = randomBytes(16);
    await writeFile(path.join(target, RESTORE_NONCE), nonce, { mode: 0o600 });
    try {
      await engine.call(() => startWithCheckpoint(container, CHECKPOINT_NAME));
    } finally {
      await removeEngineCopy(nonce);
    }
    await relisten(engine, container);
  };
}

/**
 * Removes the copy of this restore's checkpoint the engine left in its temporary directory:
 * the one holding this restore's nonce, so never another restore's, under way or not. An
 * engine whose temporary directory is not this host's (another mount namespace, such as a
 * Docker-in-Docker sidecar) keeps its copies: docs/hibernate.md says so.
 */
async function removeEngineCopy(nonce: Buffer): Promise<void> {
  const names = await readdir(ENGINE_TEMP_DIR).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(ENGINE_COPY_PREFIX)) continue;
    const copy = path.join(ENGINE_TEMP_DIR, name);
    const held = await readFile(path.join(copy, RESTORE_NONCE)).catch(() => undefined);
    if (held?.equals(nonce)) {
      await rm(copy, { recursive: true, force: true }).catch(() => undefined);
      return;
    }
  }
}

export async function restoreWorkspace(
  host: CheckpointHost,
  runtimeId: string,
  sandboxId: string,
  sandboxSessionId: string,
  dir: string,
): Promise<void> {
  const located = host.locate(runtimeId);
  if (!located) throw new Error(`not a runtime id of a configured Docker engine: ${runtimeId}`);
  const container = located.engine.docker.getContainer(located.containerId);
  await execWithInput(
    located.engine,
    container,
    {
      // Never the tar's owners or modes beyond the code's own: it runs as the code's uid.
      Cmd: ["tar", "-C", workspaceOf(host, sandboxSessionId), "--no-same-owner", "-xf", "-"],
      User: `${codeUidOf(sandboxId)}:${host.codeGid}`,
    },
    path.join(dir, WORKSPACE_TAR),
  );
}

function workspaceOf(host: CheckpointHost, sandboxSessionId: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(sandboxSessionId))
    throw new Error(`not a sandbox session id: ${sandboxSessionId}`);
  return `${host.sessionsRoot}/${sandboxSessionId}/workspace`;
}

/**
 * Asks the server to stop listening. Its connections close PAUSE_GRACE_MS after it answers;
 * whether the host still connects to the socket's file says nothing (runsc keeps the host's
 * end while an interpreter lives, and checkpoints all the same): the time is what counts.
 */
async function requestPause(host: CheckpointHost, sandboxId: string): Promise<void> {
  const answer = await request(`${sandboxOrigin(host.endpointOf(sandboxId))}/sandbox/pause-listener`, {
    method: "POST",
    dispatcher: host.dispatcher,
    headersTimeout: 5_000,
    bodyTimeout: 5_000,
  });
  await answer.body.dump();
  if (answer.statusCode !== 200)
    throw new Error(
      `the sandbox server did not pause its listener (HTTP ${answer.statusCode}): an image older than hibernation?`,
    );
}

async function sizeOf(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

/**
 * A paused server of a sandbox that is still running (its checkpoint failed early) listens
 * again: its sealed directory is opened for the new socket, then sealed once it answers.
 */
async function listenAgain(
  host: CheckpointHost,
  engine: DockerEngine,
  container: Dockerode.Container,
  sandboxId: string,
): Promise<void> {
  await host.reopenSocketDir(sandboxId);
  try {
    await relisten(engine, container);
    const deadline = Date.now() + RELISTEN_WAIT_MS;
    while (Date.now() < deadline && !(await socketAccepts(host.socketOf(sandboxId)))) await sleep(20);
  } finally {
    await host.seal(sandboxId);
  }
}

/** Whether something accepts connections on the Unix socket at `socketPath`. */
export function socketAccepts(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function relisten(engine: DockerEngine, container: Dockerode.Container): Promise<void> {
  await engine.call(() => container.kill({ signal: SIGNAL_RELISTEN }));
}

async function isRunning(engine: DockerEngine, container: Dockerode.Container): Promise<boolean> {
  try {
    return (await engine.call(() => container.inspect())).State.Running;
  } catch {
    return false;
  }
}

/** dockerode sends start's options as a body too, which the engine refuses: query only. */
function startWithCheckpoint(container: Dockerode.Container, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    container.modem.dial(
      {
        path: `/containers/${container.id}/start?`,
        method: "POST",
        options: { _query: { checkpoint: name }, _body: {} },
        statusCodes: { 204: true, 304: true, 404: "no such container", 500: "server error" },
      },
      (error: unknown) => (error ? reject(error) : resolve()),
    );
  });
}

/** How the checkpoint steps reach a Docker runtime's engines, sockets and settings. */
export function checkpointHostOf(runtime: {
  engines: DockerEngines;
  socketDirs: SocketDirs;
  http: Dispatcher;
  options: DockerRuntimeOptions;
}): CheckpointHost {
  const { socketDirs, options } = runtime;
  return {
    locate: (runtimeId) => runtime.engines.locate(runtimeId),
    socketOf: (sandboxId) => socketDirs.socketOf(sandboxId),
    removeSocket: (sandboxId) =>
      socketDirs.whileUnsealed(sandboxId, () => rm(socketDirs.socketOf(sandboxId), { force: true })),
    // The same directory (its container's bind mount holds it), open for the server to bind
    // in again as the gateway's uid: never writable by anyone else (socket-dirs.ts).
    reopenSocketDir: async (sandboxId) => {
      await socketDirs.open(sandboxId);
      await rm(socketDirs.socketOf(sandboxId), { force: true });
    },
    seal: (sandboxId) => socketDirs.seal(sandboxId),
    endpointOf: (sandboxId) => unixEndpoint(socketDirs.socketOf(sandboxId)),
    dispatcher: runtime.http,
    sessionsRoot: options.sessionsRoot,
    codeGid: Number(options.user.split(":")[1]),
    maxWorkspaceTarBytes: maxWorkspaceTarBytes(Object.values(options.resourceClasses)),
  };
}

/**
 * A tar of a workspace is at most its tmpfs's size plus 512 bytes of header per file: twice
 * the largest class's tmpfs and 16 MiB more leaves room for many small files, and still bounds
 * what a sandbox can make the gateway write to the host's disk.
 */
function maxWorkspaceTarBytes(classes: ResourceClass[]): number {
  return 2 * Math.max(0, ...classes.map((rc) => rc.tmpfsBytes)) + 16 * 1024 * 1024;
}
