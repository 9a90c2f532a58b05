/**
 * The production runtime: each sandbox is a hardened container (container-spec.ts) on one
 * of several Docker engines on this host, with no network at all, reached by the gateway
 * through a Unix socket in the sandbox's own directory (socket-dirs.ts).
 *
 * runtimeId is `<engine index>:<container id>`, so destroy goes to the right engine without
 * asking the others. Containers outlive the gateway on purpose: list() is what
 * reconciliation compares with the store after a restart.
 */
import { rm } from "node:fs/promises";
import type Dockerode from "dockerode";
import type { Logger } from "pino";
import type { Agent } from "undici";
import { createSandboxAgent, unixEndpoint } from "../../forward/sandbox-agent.js";
import type { SandboxHibernation } from "../sandbox-hibernation.js";
import {
  PartialListError,
  type RuntimeSandbox,
  type SandboxRuntime,
  type StartedSandbox,
  type StartRequest,
} from "../sandbox-runtime.js";
import { CgroupUsageReader } from "./cgroup-usage.js";
import { buildContainerSpec, containerName, LABELS } from "./container-spec.js";
import { usageFromStats } from "./container-usage.js";
import { dockerMessageOf, dockerStatusOf } from "./docker-api-errors.js";
import {
  type CheckpointHost,
  checkpointKindOf,
  checkpointSandbox,
  restoreWorkspace,
  type StartFromCheckpoint,
  startFromMemoryCheckpoint,
} from "./docker-checkpoint.js";
import { DockerEngine, type RegisteredRuntime } from "./docker-engine.js";
import {
  type DockerRuntimeOptions,
  type DockerRuntimeOptionsInput,
  dockerRuntimeOptionsSchema,
  type ResourceClass,
  socketNamespace,
} from "./docker-runtime-options.js";
import { attachEgressSocket, type SandboxEgress, socketAnswers } from "./sandbox-egress.js";
import { SocketDirs } from "./socket-dirs.js";
import { SandboxStartError, waitForSandboxHealth } from "./wait-for-sandbox-health.js";

/** Socket directories without a container are removed once this old (a start makes the directory first). */
const ORPHAN_DIR_GRACE_MS = 10 * 60_000;

export interface EngineStatus {
  index: number;
  host: string;
  /** Answered just now. */
  up: boolean;
  /** Running containers of this deployment (0 when down). */
  containers: number;
  /** Why it is down. */
  problem?: string;
}

/**
 * list() could not ask every engine: `partial` holds what the others answered. Reconciling
 * against a partial list would take the unreachable engines' sandboxes for lost, so list()
 * throws; a caller that knows better can use `partial` for the engines that did answer.
 */
export class DockerEnginesUnreachableError extends PartialListError {
  override readonly name = "DockerEnginesUnreachableError";
  constructor(
    readonly unreachable: { index: number; host: string; problem: string }[],
    override readonly partial: DockerSandbox[],
  ) {
    super(
      `Docker engine(s) not answering: ${unreachable.map((e) => `${e.host} (${e.problem})`).join(", ")}`,
      partial,
    );
  }
}

/** No engine that answered has the pool's image; the pool counts it as a failed start. */
export class SandboxImageMissingError extends Error {
  override readonly name = "SandboxImageMissingError";
  constructor(
    readonly image: string,
    notAnswering: string[],
  ) {
    super(
      `image ${image} is missing on every Docker engine: build it with npm run build:sandbox-image` +
        (notAnswering.length > 0 ? ` (not answering: ${notAnswering.join(", ")})` : ""),
    );
  }
}

export interface DockerSandbox extends RuntimeSandbox {
  createdAt: number;
  /** Its pool allows egress: it has a proxy socket to serve. */
  egress: boolean;
  /** False for a container that exited (crashed, killed, out of memory): its sandbox is gone. */
  running: boolean;
}

export interface EngineRuntimes {
  host: string;
  runtimes?: Record<string, RegisteredRuntime>;
  /** Why the engine did not answer. */
  problem?: string;
}

export interface StartTimings {
  placeMs: number;
  createMs: number;
  startMs: number;
  readyMs: number;
  totalMs: number;
}

export class DockerRuntime implements SandboxRuntime {
  readonly kind = "docker" as const;
  readonly isolated = true;
  readonly options: DockerRuntimeOptions;
  /** With a writable root, user code could leave files where no scrub looks. */
  get recyclable(): boolean {
    return this.options.readOnlyRootFilesystem;
  }
  readonly socketDirs: SocketDirs;
  /** Sandboxes being started here: their egress socket is open before their container exists. */
  private readonly starting = new Set<string>();
  /**
   * The sandbox id of each container this process started, by runtime id: its destroy then
   * needs no inspect to find the files to release (one Docker call fewer per sandbox).
   */
  private readonly sandboxIdOf = new Map<string, string>();
  private readonly engineList: DockerEngine[];
  private readonly cgroups = new CgroupUsageReader();
  private readonly http: Agent;
  private readonly log: Logger | undefined;

  /**
   * `egress` serves egress pools' proxy sockets (the gateway's filtering proxy); without it,
   * egress pools cannot start.
   */
  constructor(
    input: DockerRuntimeOptionsInput,
    log?: Logger,
    private readonly egress?: SandboxEgress,
  ) {
    this.options = dockerRuntimeOptionsSchema.parse(input);
    this.log = log;
    this.engineList = this.options.hosts.map(
      (host, index) =>
        new DockerEngine(
          index,
          host,
          this.options.engineDownMs,
          this.options.engineRequestTimeoutMs,
          this.options.tls,
        ),
    );
    this.socketDirs = new SocketDirs(this.options.socketDir, socketNamespace(this.options));
    this.http = createSandboxAgent({
      connect: { timeout: this.options.healthProbeTimeoutMs },
      keepAliveTimeout: 1_000,
    });
  }

  async start(request: StartRequest): Promise<StartedSandbox> {
    return (await this.startTimed(request)).sandbox;
  }

  /** Hibernation: gVisor sandboxes whole, plain ones their workspace (docker-checkpoint.ts). */
  readonly hibernation: SandboxHibernation = {
    checkpointKindOf,
    checkpoint: (request) => checkpointSandbox(this.checkpointHost(), request),
    restore: async (request) => {
      if (request.kind !== "memory") return (await this.startTimed(request)).sandbox;
      // Its sandbox id comes back, and with it its container's name: a container a crash left
      // under that name (a restore killed midway, a hibernation killed before the removal) goes.
      await this.removeByName(containerName(this.options.deployment, request.sandboxId));
      const from = startFromMemoryCheckpoint((engine) => this.dataRoot(engine), request.dir);
      return (await this.startTimed(request, from)).sandbox;
    },
    restoreFiles: ({ runtimeId, sandboxId, sandboxSessionId, dir }) =>
      restoreWorkspace(this.checkpointHost(), runtimeId, sandboxId, sandboxSessionId, dir),
  };

  /**
   * start(), also saying where the time went (for logs and benchmarks). `fromCheckpoint`
   * starts the new container from a memory checkpoint instead of fresh.
   */
  async startTimed(
    request: StartRequest,
    fromCheckpoint?: StartFromCheckpoint,
  ): Promise<{ sandbox: StartedSandbox; timings: StartTimings }> {
    const began = Date.now();
    const { pool } = request;
    const resourceClass = this.options.resourceClasses[pool.resourceClass];
    if (!resourceClass) {
      throw new Error(
        `pool ${pool.name}: resource class '${pool.resourceClass}' is not configured for Docker`,
      );
    }
    const egress = pool.egress === true;
    if (egress && !this.egress) {
      throw new Error(`pool ${pool.name} allows egress, but this gateway has no egress proxy to offer it`);
    }
    assertBeforeDeadline(request.deadline, "placing it");

    const engine = await this.place(pool.image);
    const placed = Date.now();
    engine.inFlight++;
    this.starting.add(request.sandboxId);
    try {
      let container: Dockerode.Container;
      try {
        container = await this.createContainer(engine, request, resourceClass, egress);
      } catch (error) {
        if (dockerStatusOf(error) === 404) engine.forgetImage(pool.image);
        await this.releaseFiles(request.sandboxId).catch(() => undefined);
        throw error;
      }
      const created = Date.now();
      const runtimeId = `${engine.index}:${container.id}`;
      this.sandboxIdOf.set(runtimeId, request.sandboxId);
      try {
        assertBeforeDeadline(request.deadline, "starting its container");
        if (fromCheckpoint) await fromCheckpoint(engine, container);
        else await engine.call(() => container.start());
        const started = Date.now();
        const socketPath = this.socketDirs.socketOf(request.sandboxId);
        const endpoint = unixEndpoint(socketPath);
        await waitForSandboxHealth({
          endpoint,
          socketPath,
          deadline: request.deadline,
          dispatcher: this.http,
          probeTimeoutMs: this.options.healthProbeTimeoutMs,
          intervalMs: this.options.healthProbeIntervalMs,
          checkAlive: () => this.whyNotRunning(engine, container),
        });
        await this.socketDirs.seal(request.sandboxId);
        const ready = Date.now();
        const timings = {
          placeMs: placed - began,
          createMs: created - placed,
          startMs: started - created,
          readyMs: ready - started,
          totalMs: ready - began,
        };
        this.log?.debug(
          { sandbox: request.sandboxId, engine: engine.host, runtimeId, ...timings },
          "sandbox ready",
        );
        return { sandbox: { runtimeId, endpoint }, timings };
      } catch (error) {
        await this.destroy(runtimeId).catch((cleanupError: unknown) =>
          this.log?.warn(
            { runtimeId, err: dockerMessageOf(cleanupError) },
            "could not remove a sandbox that failed to start; reconciliation will",
          ),
        );
        throw error;
      }
    } finally {
      engine.inFlight--;
      this.starting.delete(request.sandboxId);
    }
  }

  async destroy(runtimeId: string): Promise<void> {
    const parsed = this.parseRuntimeId(runtimeId);
    if (!parsed) {
      this.log?.warn({ runtimeId }, "destroy: not a runtime id of a configured Docker engine, ignored");
      return;
    }
    const { engine, containerId } = parsed;
    const container = engine.docker.getContainer(containerId);
    let sandboxId = this.sandboxIdOf.get(runtimeId);
    if (sandboxId === undefined) {
      try {
        sandboxId = (await engine.call(() => container.inspect())).Config.Labels?.[LABELS.sandbox];
      } catch (error) {
        // Gone already: list() sweeps its directory.
        if (dockerStatusOf(error) === 404) return;
        throw error;
      }
    }
    try {
      // Forced: the engine kills it (SIGKILL) and removes it in one call.
      await engine.call(() => container.remove({ force: true, v: true }));
    } catch (error) {
      // 409 "removal already in progress": a concurrent destroy finishes the job.
      const status = dockerStatusOf(error);
      if (status !== 404 && status !== 409) throw error;
    }
    this.sandboxIdOf.delete(runtimeId);
    if (sandboxId) await this.releaseFiles(sandboxId);
  }

  /** Every container of the deployment, running or not (an exited one still needs removing). */
  async list(): Promise<DockerSandbox[]> {
    const answers = await Promise.all(
      this.engineList.map(async (engine) => {
        try {
          return {
            engine,
            containers: await engine.listContainers(this.options.deployment, true, this.options.owner),
          };
        } catch (error) {
          return { engine, problem: dockerMessageOf(error) };
        }
      }),
    );
    const sandboxes: DockerSandbox[] = [];
    const unreachable: { index: number; host: string; problem: string }[] = [];
    for (const answer of answers) {
      if (answer.containers === undefined) {
        unreachable.push({ index: answer.engine.index, host: answer.engine.host, problem: answer.problem });
        continue;
      }
      for (const container of answer.containers) {
        sandboxes.push({
          runtimeId: `${answer.engine.index}:${container.Id}`,
          sandboxId: container.Labels[LABELS.sandbox] ?? "",
          pool: container.Labels[LABELS.pool] ?? "",
          createdAt: container.Created * 1000,
          running: container.State === "running",
          egress: container.Labels[LABELS.egress] === "true",
        });
      }
    }
    if (unreachable.length > 0) throw new DockerEnginesUnreachableError(unreachable, sandboxes);
    // Containers another replica destroyed (a missing one only costs its destroy an inspect).
    const listed = new Set(sandboxes.map((sandbox) => sandbox.runtimeId));
    for (const runtimeId of this.sandboxIdOf.keys()) {
      if (!listed.has(runtimeId)) this.sandboxIdOf.delete(runtimeId);
    }
    const swept = await this.socketDirs.sweep(
      new Set(sandboxes.map((sandbox) => sandbox.sandboxId)),
      Date.now() - ORPHAN_DIR_GRACE_MS,
    );
    if (swept.length > 0)
      this.log?.info({ sandboxes: swept }, "removed socket directories of gone sandboxes");
    await this.retakeEgress(sandboxes);
    return sandboxes;
  }

  /** Asks every engine now; down ones are reported with the reason. */
  async engines(): Promise<EngineStatus[]> {
    return Promise.all(
      this.engineList.map(async (engine): Promise<EngineStatus> => {
        try {
          const running = await engine.listContainers(this.options.deployment, false, this.options.owner);
          return { index: engine.index, host: engine.host, up: true, containers: running.length };
        } catch (error) {
          return {
            index: engine.index,
            host: engine.host,
            up: false,
            containers: 0,
            problem: engine.problem ?? dockerMessageOf(error),
          };
        }
      }),
    );
  }

  /** Each engine's registered OCI runtimes, or why it did not say: serve checks a pool's isolation has one. */
  async registeredRuntimes(): Promise<EngineRuntimes[]> {
    return Promise.all(
      this.engineList.map(async (engine): Promise<EngineRuntimes> => {
        try {
          return { host: engine.host, runtimes: await engine.runtimes() };
        } catch (error) {
          return { host: engine.host, problem: dockerMessageOf(error) };
        }
      }),
    );
  }

  /** The OCI runtime a sandbox's container runs on (HostConfig.Runtime); undefined once it is gone. */
  async runtimeOf(runtimeId: string): Promise<string | undefined> {
    const parsed = this.parseRuntimeId(runtimeId);
    if (!parsed) return undefined;
    const container = parsed.engine.docker.getContainer(parsed.containerId);
    try {
      return (await parsed.engine.call(() => container.inspect())).HostConfig.Runtime;
    } catch (error) {
      if (dockerStatusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** True when some engine answers and has `image`: what dev mode checks before choosing docker. */
  async imageAvailable(image: string): Promise<boolean> {
    const answers = await Promise.all(
      this.engineList.map((engine) => engine.hasImage(image).catch(() => false)),
    );
    return answers.some(Boolean);
  }

  async close(): Promise<void> {
    // Containers stay: a restarted gateway reconciles them.
    for (const engine of this.engineList) engine.close();
    await this.http.close();
  }

  /**
   * Least loaded engine (running containers + starts in flight) among those with the image.
   * The load is asked only when there is a choice: one engine up takes the start either way.
   */
  private async place(image: string): Promise<DockerEngine> {
    const candidates = this.engineList.filter((engine) => engine.up);
    const loadOf = async (engine: DockerEngine) =>
      candidates.length === 1
        ? 0
        : (await engine.listContainers(this.options.deployment, false, this.options.owner)).length;
    const answers = await Promise.all(
      candidates.map(async (engine) => {
        try {
          const [hasImage, running] = await Promise.all([engine.hasImage(image), loadOf(engine)]);
          return { engine, hasImage, load: running + engine.inFlight };
        } catch (error) {
          return { engine, hasImage: false, load: 0, problem: dockerMessageOf(error) };
        }
      }),
    );
    let best: { engine: DockerEngine; load: number } | undefined;
    for (const answer of answers) {
      if (answer.hasImage && (!best || answer.load < best.load)) best = answer;
    }
    if (best) return best.engine;

    const down = [
      ...this.engineList
        .filter((engine) => !candidates.includes(engine))
        .map((e) => `${e.host} (${e.problem ?? "down"})`),
      ...answers.filter((a) => a.problem).map((a) => `${a.engine.host} (${a.problem})`),
    ];
    const answered = answers.filter((a) => !a.problem);
    if (answered.length === 0) {
      throw new Error(`no Docker engine is answering: ${down.join(", ")}`);
    }
    throw new SandboxImageMissingError(image, down);
  }

  /** The sandbox's socket directory (and egress socket), then its container, not started. */
  private async createContainer(
    engine: DockerEngine,
    request: StartRequest,
    resourceClass: ResourceClass,
    egress: boolean,
  ): Promise<Dockerode.Container> {
    const { sandboxId, pool } = request;
    const socketDir = await this.socketDirs.prepare(sandboxId);
    if (egress) await attachEgressSocket(this.egress!, sandboxId, this.socketDirs.egressSocketOf(sandboxId));
    assertBeforeDeadline(request.deadline, "creating its container");
    const spec = buildContainerSpec(this.options, {
      sandboxId,
      pool: pool.name,
      image: pool.image,
      resourceClass,
      resourceClassName: pool.resourceClass,
      engineHost: engine.host,
      socketDir,
      egress,
      isolation: pool.isolation ?? "container",
    });
    return engine.call((docker) => docker.createContainer(spec));
  }

  /** What a sandbox has on this host besides its container: its egress proxy and directory. */
  private async releaseFiles(sandboxId: string): Promise<void> {
    if (this.egress?.serves(sandboxId)) await this.egress.close(sandboxId);
    await this.socketDirs.remove(sandboxId);
  }

  private async whyNotRunning(
    engine: DockerEngine,
    container: Dockerode.Container,
  ): Promise<string | undefined> {
    try {
      const info = await engine.call(() => container.inspect());
      if (info.State.Running) return undefined;
      const logs = await this.tailLogs(container);
      return `status ${info.State.Status}, exit code ${info.State.ExitCode}${info.State.OOMKilled ? " (out of memory)" : ""}${logs ? `; last output:\n${logs}` : ""}`;
    } catch (error) {
      if (dockerStatusOf(error) === 404) return "the container was removed";
      return undefined;
    }
  }

  private async tailLogs(container: Dockerode.Container): Promise<string> {
    try {
      const raw = await container.logs({ stdout: true, stderr: true, tail: 20, follow: false });
      return demuxLogs(Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw))).slice(-2_000);
    } catch {
      return "";
    }
  }

  /**
   * Running egress sandboxes whose proxy socket nobody answers (the replica that served it is
   * gone) get it from this process. Called from list(), so reconciliation heals them.
   */
  private async retakeEgress(sandboxes: DockerSandbox[]): Promise<void> {
    if (!this.egress) return;
    // Proxies of sandboxes gone (destroyed by another replica, or lost a takeover race) close.
    const running = new Set(sandboxes.filter((s) => s.egress && s.running).map((s) => s.sandboxId));
    for (const sandboxId of this.egress.served()) {
      if (!running.has(sandboxId) && !this.starting.has(sandboxId)) await this.egress.close(sandboxId);
    }
    for (const sandbox of sandboxes) {
      if (!sandbox.egress || !sandbox.running || this.egress.serves(sandbox.sandboxId)) continue;
      const socketPath = this.socketDirs.egressSocketOf(sandbox.sandboxId);
      if (await socketAnswers(socketPath)) continue;
      try {
        const taken = await this.socketDirs.whileUnsealed(sandbox.sandboxId, () =>
          attachEgressSocket(this.egress!, sandbox.sandboxId, socketPath),
        );
        if (taken)
          this.log?.info({ sandbox: sandbox.sandboxId }, "took over an egress sandbox's proxy socket");
      } catch (error) {
        this.log?.warn(
          { sandbox: sandbox.sandboxId, err: error },
          "could not take over an egress proxy socket",
        );
      }
    }
  }

  /** Removes the container of that name on every engine that answers; none is not an error. */
  private async removeByName(name: string): Promise<void> {
    await Promise.all(
      this.engineList
        .filter((engine) => engine.up)
        .map(async (engine) => {
          try {
            await engine.call((docker) => docker.getContainer(name).remove({ force: true, v: true }));
          } catch (error) {
            const status = dockerStatusOf(error);
            if (status !== 404 && status !== 409) throw error;
          }
        }),
    );
  }

  private checkpointHost(): CheckpointHost {
    return {
      locate: (runtimeId) => this.parseRuntimeId(runtimeId),
      socketOf: (sandboxId) => this.socketDirs.socketOf(sandboxId),
      removeSocket: (sandboxId) =>
        this.socketDirs.whileUnsealed(sandboxId, () =>
          rm(this.socketDirs.socketOf(sandboxId), { force: true }),
        ),
      // The same directory (its container's bind mount holds it), open for the server to bind
      // in again as the gateway's uid: never writable by anyone else (socket-dirs.ts).
      reopenSocketDir: async (sandboxId) => {
        await this.socketDirs.open(sandboxId);
        await rm(this.socketDirs.socketOf(sandboxId), { force: true });
      },
      seal: (sandboxId) => this.socketDirs.seal(sandboxId),
      endpointOf: (sandboxId) => unixEndpoint(this.socketDirs.socketOf(sandboxId)),
      dispatcher: this.http,
      sessionsRoot: this.options.sessionsRoot,
      codeGid: Number(this.options.user.split(":")[1]),
      maxWorkspaceTarBytes: maxWorkspaceTarBytes(Object.values(this.options.resourceClasses)),
    };
  }

  /**
   * An engine's data root (`docker info`), where it restores checkpoints from, asked once per
   * engine. Only an engine whose data root is this host's (a local socket) can restore memory.
   */
  private readonly dataRoots = new Map<number, Promise<string>>();
  private dataRoot(engine: DockerEngine): Promise<string> {
    let answer = this.dataRoots.get(engine.index);
    if (answer === undefined) {
      answer = (async () => {
        const info = (await engine.call((docker) => docker.info())) as { DockerRootDir?: string };
        if (!info.DockerRootDir) throw new Error("the Docker engine did not say its data root");
        return info.DockerRootDir;
      })();
      answer.catch(() => this.dataRoots.delete(engine.index));
      this.dataRoots.set(engine.index, answer);
    }
    return answer;
  }

  private parseRuntimeId(runtimeId: string): { engine: DockerEngine; containerId: string } | undefined {
    const match = /^(\d+):([0-9a-f]{12,64})$/.exec(runtimeId);
    if (!match) return undefined;
    const engine = this.engineList[Number(match[1])];
    return engine ? { engine, containerId: match[2]! } : undefined;
  }

  /**
   * What the sandbox used, from its cgroup: its files when this host sees them
   * (cgroup-usage.ts), else Docker's stats (container-usage.ts); undefined once it is gone
   * or stopped.
   */
  /**
   * Starts the sandbox's memory peak anew (cgroup-usage.ts). Only through its cgroup files:
   * Docker's API cannot, so a gateway that does not see them answers false.
   */
  async resetMemoryPeak(runtimeId: string): Promise<boolean> {
    const parsed = this.parseRuntimeId(runtimeId);
    return parsed ? this.cgroups.resetPeak(parsed.containerId) : false;
  }

  async usage(runtimeId: string) {
    const parsed = this.parseRuntimeId(runtimeId);
    if (!parsed) return undefined;
    const fromFiles = await this.cgroups.read(parsed.containerId);
    if (fromFiles) return fromFiles;
    const container = parsed.engine.docker.getContainer(parsed.containerId);
    try {
      return usageFromStats(
        await parsed.engine.call(() => container.stats({ stream: false, "one-shot": true })),
      );
    } catch (error) {
      if (dockerStatusOf(error) === 404) return undefined;
      throw error;
    }
  }
}

function assertBeforeDeadline(deadline: number, doing: string): void {
  if (Date.now() >= deadline)
    throw new SandboxStartError(`the sandbox start deadline passed before ${doing}`);
}

/** Docker multiplexes stdout/stderr of a container without a TTY: 8-byte frame headers. */
function demuxLogs(raw: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length && raw[offset]! <= 2 && raw.readUInt16BE(offset + 1) === 0) {
    const size = raw.readUInt32BE(offset + 4);
    parts.push(raw.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  if (offset === 0) return raw.toString("utf8");
  return Buffer.concat(parts).toString("utf8");
}

/**
 * A tar of a workspace is at most its tmpfs's size plus 512 bytes of header per file: twice
 * the largest class's tmpfs and 16 MiB more leaves room for many small files, and still bounds
 * what a sandbox can make the gateway write to the host's disk.
 */
function maxWorkspaceTarBytes(classes: ResourceClass[]): number {
  return 2 * Math.max(0, ...classes.map((rc) => rc.tmpfsBytes)) + 16 * 1024 * 1024;
}
