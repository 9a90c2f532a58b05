/**
 * One Docker engine as the runtime sees it: a client with its own connection pool, and
 * whether it answered lately (an engine that did not is skipped in placement for a while).
 */
import http from "node:http";
import https from "node:https";
import { inspect } from "node:util";
import Dockerode from "dockerode";
import { dockerMessageOf, dockerStatusOf, isEngineUnreachable } from "./docker-api-errors.js";
import { type DockerTlsFiles, parseDockerHost } from "./docker-runtime-options.js";
import { readDockerTls } from "./docker-tls.js";

/** An OCI runtime as `docker info` lists it (daemon.json `runtimes`). */
export interface RegisteredRuntime {
  path?: string;
  runtimeArgs?: string[];
}

/** How long an image seen on an engine is taken to be there without asking again. */
const IMAGE_KNOWN_MS = 30_000;

export class DockerEngine {
  readonly docker: Dockerode;
  /** Starts placed here and not finished yet: counted as load so parallel warm-ups spread out. */
  inFlight = 0;
  private downUntil = 0;
  private lastProblem: string | undefined;
  private readonly agent: http.Agent;
  /** When each image was last seen here (hasImage). */
  private readonly imagesSeen = new Map<string, number>();

  constructor(
    readonly index: number,
    readonly host: string,
    private readonly downMs: number,
    requestTimeoutMs: number,
    /** TLS for a tcp:// engine (the configuration refuses cleartext tcp unless allowed). */
    tls?: DockerTlsFiles,
  ) {
    const parsed = parseDockerHost(host, { tls: tls !== undefined });
    if (!parsed) throw new Error(`not a Docker endpoint: ${host}`);
    const pool = { keepAlive: true, maxSockets: 16 };
    // Verified against the configured CA and the engine's host name (Node's defaults, kept).
    const material = parsed.kind === "tcp" && tls !== undefined ? readDockerTls(tls) : undefined;
    this.agent = material
      ? new https.Agent({ ...pool, ...material, rejectUnauthorized: true })
      : new http.Agent(pool);
    // docker-modem formats every request's options for its debug log whether or not that log
    // is on (util.inspect, all depths, hidden properties): through the agent, every socket it
    // holds. That is ~2 ms of the event loop per API call, taken from the leases served
    // meanwhile; the agent shown as a name costs nothing.
    Object.defineProperty(this.agent, inspect.custom, { value: () => `[Docker agent ${host}]` });
    const common = {
      timeout: requestTimeoutMs,
      agent: this.agent,
      // dockerode merges DOCKER_* variables into its defaults; this engine is exactly `host`,
      // with exactly the TLS material configured (none for a socket or allowed cleartext).
      ca: material?.ca,
      cert: material?.cert,
      key: material?.key,
    };
    this.docker =
      parsed.kind === "unix"
        ? new Dockerode({ ...common, socketPath: parsed.socketPath })
        : new Dockerode({
            ...common,
            protocol: material ? "https" : "http",
            host: parsed.host,
            port: parsed.port,
          });
  }

  /** False while the engine is marked down after failing to answer. */
  get up(): boolean {
    return Date.now() >= this.downUntil;
  }

  get problem(): string | undefined {
    return this.lastProblem;
  }

  /** Runs one API call; an engine that does not answer is marked down, one that does is up. */
  async call<T>(operation: (docker: Dockerode) => Promise<T>): Promise<T> {
    try {
      const result = await operation(this.docker);
      this.downUntil = 0;
      this.lastProblem = undefined;
      return result;
    } catch (error) {
      if (isEngineUnreachable(error)) {
        this.downUntil = Date.now() + this.downMs;
        this.lastProblem = dockerMessageOf(error);
      } else if (dockerStatusOf(error) !== undefined) {
        this.downUntil = 0;
      }
      throw error;
    }
  }

  /**
   * Whether the engine has `image`. A yes is remembered for IMAGE_KNOWN_MS: every start asks,
   * and an API call per start is Docker work (and event-loop time) taken from the leases served
   * while the pool refills. An image removed meanwhile fails the create, which forgets it.
   */
  async hasImage(image: string): Promise<boolean> {
    const seen = this.imagesSeen.get(image);
    if (seen !== undefined && Date.now() - seen < IMAGE_KNOWN_MS) return true;
    try {
      await this.call((docker) => docker.getImage(image).inspect());
      this.imagesSeen.set(image, Date.now());
      return true;
    } catch (error) {
      this.imagesSeen.delete(image);
      if (dockerStatusOf(error) === 404) return false;
      throw error;
    }
  }

  /** The OCI runtimes the engine has registered (`docker info`: Runtimes), by name. */
  async runtimes(): Promise<Record<string, RegisteredRuntime>> {
    const info = (await this.call((docker) => docker.info())) as {
      Runtimes?: Record<string, RegisteredRuntime>;
    };
    return info.Runtimes ?? {};
  }

  /** Asks again next time: a create found the image gone. */
  forgetImage(image: string): void {
    this.imagesSeen.delete(image);
  }

  /** The deployment's containers (only `owner`'s, when given), running ones or all. */
  listContainers(deployment: string, all: boolean, owner?: string): Promise<Dockerode.ContainerInfo[]> {
    const label = [
      `sandpool.deployment=${deployment}`,
      ...(owner === undefined ? [] : [`sandpool.owner=${owner}`]),
    ];
    return this.call((docker) => docker.listContainers({ all, filters: { label } }));
  }

  close(): void {
    this.agent.destroy();
  }
}
