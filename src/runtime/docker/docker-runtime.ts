/**
 * The production runtime: each sandbox is a hardened container (container-spec.ts) on one
 * of several Docker engines on this host, with no network at all, reached by the gateway
 * through a Unix socket in the sandbox's own directory (socket-dirs.ts).
 *
 * runtimeId is `<engine index>:<container id>`, so destroy goes to the right engine without
 * asking the others. Containers outlive the gateway on purpose: list() is what
 * reconciliation compares with the store after a restart.
 *
 * Beside it: the engines and placement (docker-engines.ts), why a container did not start
 * (container-diagnosis.ts), the egress socket takeover (egress-takeover.ts) and the
 * checkpoint steps with the host they reach (docker-checkpoint.ts).
 */
import type Dockerode from "dockerode";
import type { Logger } from "pino";
import type { Agent } from "undici";
import { createSandboxAgent, unixEndpoint } from "../../forward/sandbox-agent.js";
import type { SandboxCheckpoints } from "../sandbox-checkpoints.js";
import type { RuntimeSandbox, SandboxRuntime, StartedSandbox, StartRequest } from "../sandbox-runtime.js";
import { CgroupUsageReader } from "./cgroup-usage.js";
import { whyNotRunning } from "./container-diagnosis.js";
import { buildContainerSpec, containerName, LABELS } from "./container-spec.js";
import { usageFromStats } from "./container-usage.js";
import { dockerMessageOf, dockerStatusOf } from "./docker-api-errors.js";
import {
  type CheckpointHost,
  checkpointHostOf,
  checkpointKindOf,
  checkpointSandbox,
  restoreWorkspace,
  type StartFromCheckpoint,
  startFromMemoryCheckpoint,
} from "./docker-checkpoint.js";
import type { DockerEngine } from "./docker-engine.js";
import { DockerEngines } from "./docker-engines.js";
import {
  DockerEnginesUnreachableError,
  type DockerSandbox,
  type EngineRuntimes,
  type EngineStatus,
  type StartTimings,
} from "./docker-runtime-answers.js";
import {
  type DockerRuntimeOptions,
  type DockerRuntimeOptionsInput,
  dockerRuntimeOptionsSchema,
  type ResourceClass,
  socketNamespace,
} from "./docker-runtime-options.js";
import { retakeEgress } from "./egress-takeover.js";
import { attachEgressSocket, type SandboxEgress } from "./sandbox-egress.js";
import { writeSandboxTrustFiles } from "./sandbox-trust-files.js";
import { SocketDirs } from "./socket-dirs.js";
import { SandboxStartError, waitForSandboxHealth } from "./wait-for-sandbox-health.js";

/** Socket directories without a container are removed once this old (a start makes the directory first). */
const ORPHAN_DIR_GRACE_MS = 10 * 60_000;

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
  private readonly dockerEngines: DockerEngines;
  /** How the checkpoint steps (docker-checkpoint.ts) reach this runtime's engines and sockets. */
  private readonly checkpointHost: CheckpointHost;
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
    this.dockerEngines = new DockerEngines(this.options);
    this.socketDirs = new SocketDirs(this.options.socketDir, socketNamespace(this.options));
    this.http = createSandboxAgent({
      connect: { timeout: this.options.healthProbeTimeoutMs },
      keepAliveTimeout: 1_000,
    });
    this.checkpointHost = checkpointHostOf({
      engines: this.dockerEngines,
      socketDirs: this.socketDirs,
      http: this.http,
      options: this.options,
    });
  }

  async start(request: StartRequest): Promise<StartedSandbox> {
    return (await this.startTimed(request)).sandbox;
  }

  /** Hibernation: gVisor sandboxes whole, plain ones their workspace (docker-checkpoint.ts). */
  readonly hibernation: SandboxCheckpoints = {
    checkpointKindOf,
    checkpoint: (request) => checkpointSandbox(this.checkpointHost, request),
    restore: async (request) => {
      if (request.kind !== "memory") return (await this.startTimed(request)).sandbox;
      // Its sandbox id comes back, and with it its container's name: a container a crash left
      // under that name (a restore killed midway, a hibernation killed before the removal) goes.
      await this.dockerEngines.removeByName(containerName(this.options.deployment, request.sandboxId));
      const from = startFromMemoryCheckpoint((engine) => this.dockerEngines.dataRoot(engine), request.dir);
      return (await this.startTimed(request, from)).sandbox;
    },
    restoreFiles: ({ runtimeId, sandboxId, sandboxSessionId, dir }) =>
      restoreWorkspace(this.checkpointHost, runtimeId, sandboxId, sandboxSessionId, dir),
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

    const engine = await this.dockerEngines.place(pool.image);
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
          checkAlive: () => whyNotRunning(engine, container),
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
    const parsed = this.dockerEngines.locate(runtimeId);
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
      this.dockerEngines.all.map(async (engine) => {
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
    return sandboxes;
  }

  /**
   * After a complete listing (reconciliation's): the socket directories of gone sandboxes
   * are removed, and running egress sandboxes whose proxy socket nobody answers (the replica
   * that served it went) are served from here; proxies of gone sandboxes close.
   */
  async tidy(listed: readonly RuntimeSandbox[]): Promise<void> {
    const swept = await this.socketDirs.sweep(
      new Set(listed.map((sandbox) => sandbox.sandboxId)),
      Date.now() - ORPHAN_DIR_GRACE_MS,
    );
    if (swept.length > 0)
      this.log?.info({ sandboxes: swept }, "removed socket directories of gone sandboxes");
    await retakeEgress(
      { egress: this.egress, socketDirs: this.socketDirs, starting: this.starting, log: this.log },
      listed,
    );
  }

  /** Asks every engine now; down ones are reported with the reason. */
  async engines(): Promise<EngineStatus[]> {
    return Promise.all(
      this.dockerEngines.all.map(async (engine): Promise<EngineStatus> => {
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
      this.dockerEngines.all.map(async (engine): Promise<EngineRuntimes> => {
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
    const parsed = this.dockerEngines.locate(runtimeId);
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
      this.dockerEngines.all.map((engine) => engine.hasImage(image).catch(() => false)),
    );
    return answers.some(Boolean);
  }

  async close(): Promise<void> {
    // Containers stay: a restarted gateway reconciles them.
    this.dockerEngines.close();
    await this.http.close();
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
    const caPem = egress ? this.egress?.trustedCaPem?.() : undefined;
    if (caPem) await writeSandboxTrustFiles(socketDir, caPem);
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
      egressTrust: caPem !== undefined,
      isolation: pool.isolation ?? "container",
    });
    return engine.call((docker) => docker.createContainer(spec));
  }

  /** What a sandbox has on this host besides its container: its egress proxy and directory. */
  private async releaseFiles(sandboxId: string): Promise<void> {
    if (this.egress?.serves(sandboxId)) await this.egress.close(sandboxId);
    await this.socketDirs.remove(sandboxId);
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
    const parsed = this.dockerEngines.locate(runtimeId);
    return parsed ? this.cgroups.resetPeak(parsed.containerId) : false;
  }

  async usage(runtimeId: string) {
    const parsed = this.dockerEngines.locate(runtimeId);
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
