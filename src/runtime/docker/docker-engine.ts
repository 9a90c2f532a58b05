/**
 * One Docker engine as the runtime sees it: a client with its own connection pool, whether
 * it answered lately (an engine that did not is skipped in placement for a while), and the
 * networks sandboxes join there, created on first use.
 */
import http from "node:http";
import Dockerode from "dockerode";
import { dockerMessageOf, dockerStatusOf, isEngineUnreachable } from "./docker-api-errors.js";
import { parseDockerHost } from "./docker-runtime-options.js";

/** Containers on one bridge cannot talk to each other: one tenant's code must not reach another's server. */
const ICC_OPTION = "com.docker.network.bridge.enable_icc";

export interface NetworkRequirement {
  name: string;
  internal: boolean;
  labels: Record<string, string>;
}

export class DockerEngine {
  readonly docker: Dockerode;
  /** Starts placed here and not finished yet: counted as load so parallel warm-ups spread out. */
  inFlight = 0;
  private downUntil = 0;
  private lastProblem: string | undefined;
  private readonly agent: http.Agent;
  private readonly networks = new Map<string, Promise<void>>();

  constructor(
    readonly index: number,
    readonly host: string,
    private readonly downMs: number,
    requestTimeoutMs: number,
  ) {
    const parsed = parseDockerHost(host);
    if (!parsed) throw new Error(`not a Docker endpoint: ${host}`);
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const common = {
      timeout: requestTimeoutMs,
      agent: this.agent,
      // dockerode merges DOCKER_* variables into its defaults; this engine is exactly `host`.
      ca: undefined,
      cert: undefined,
      key: undefined,
    };
    this.docker =
      parsed.kind === "unix"
        ? new Dockerode({ ...common, socketPath: parsed.socketPath })
        : new Dockerode({ ...common, protocol: "http", host: parsed.host, port: parsed.port });
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

  async hasImage(image: string): Promise<boolean> {
    try {
      await this.call((docker) => docker.getImage(image).inspect());
      return true;
    } catch (error) {
      if (dockerStatusOf(error) === 404) return false;
      throw error;
    }
  }

  /** Containers of the deployment; running ones only unless `all`. */
  listContainers(deployment: string, all: boolean): Promise<Dockerode.ContainerInfo[]> {
    return this.call((docker) =>
      docker.listContainers({ all, filters: { label: [`sandpool.deployment=${deployment}`] } }),
    );
  }

  /** Creates the network on first use; refuses an existing one that is not what we need. */
  ensureNetwork(requirement: NetworkRequirement): Promise<void> {
    let ready = this.networks.get(requirement.name);
    if (!ready) {
      ready = this.createOrCheckNetwork(requirement);
      this.networks.set(requirement.name, ready);
      // A failure is not remembered: the next start tries again.
      ready.catch(() => this.networks.delete(requirement.name));
    }
    return ready;
  }

  /** Forget what we know of a network (it was removed behind our back). */
  forgetNetwork(name: string): void {
    this.networks.delete(name);
  }

  close(): void {
    this.agent.destroy();
  }

  private async createOrCheckNetwork(requirement: NetworkRequirement): Promise<void> {
    const existing = await this.inspectNetwork(requirement.name);
    if (existing) return checkNetwork(this.host, requirement, existing);
    try {
      const created = await this.call((docker) =>
        docker.createNetwork({
          Name: requirement.name,
          Driver: "bridge",
          Internal: requirement.internal,
          CheckDuplicate: true,
          Attachable: false,
          Labels: requirement.labels,
          Options: { [ICC_OPTION]: "false" },
        }),
      );
      await this.keepOneNetwork(requirement.name, created.id);
    } catch (error) {
      // Another gateway replica created it first.
      if (dockerStatusOf(error) !== 409) throw error;
      const raced = await this.inspectNetwork(requirement.name);
      if (!raced) throw error;
      checkNetwork(this.host, requirement, raced);
    }
  }

  /**
   * Docker's duplicate check is not atomic: replicas starting together can each create the
   * network. The oldest one is kept: a later creator always sees the earlier network and
   * removes its own, so one network remains and names stay unambiguous.
   */
  private async keepOneNetwork(name: string, ours: string): Promise<void> {
    const same = (await this.call((docker) => docker.listNetworks({ filters: { name: [name] } }))).filter(
      (network) => network.Name === name,
    );
    if (same.length < 2) return;
    const oldestFirst = same.sort(
      (a, b) => Date.parse(a.Created) - Date.parse(b.Created) || a.Id.localeCompare(b.Id),
    );
    const winner = oldestFirst[0]!.Id;
    if (winner !== ours) {
      await this.call((docker) => docker.getNetwork(ours).remove()).catch(() => undefined);
    }
  }

  private async inspectNetwork(name: string): Promise<Dockerode.NetworkInspectInfo | undefined> {
    try {
      const info: Dockerode.NetworkInspectInfo = await this.call((docker) =>
        docker.getNetwork(name).inspect(),
      );
      // The API also matches ID prefixes; only the exact name counts.
      return info.Name === name ? info : undefined;
    } catch (error) {
      if (dockerStatusOf(error) === 404) return undefined;
      throw error;
    }
  }
}

function checkNetwork(
  host: string,
  requirement: NetworkRequirement,
  info: Dockerode.NetworkInspectInfo,
): void {
  const problems: string[] = [];
  if (info.Driver !== "bridge") problems.push(`its driver is ${info.Driver}, not bridge`);
  if (Boolean(info.Internal) !== requirement.internal)
    problems.push(requirement.internal ? "it is not internal (it has egress)" : "it is internal (no egress)");
  if (info.Options?.[ICC_OPTION] !== "false")
    problems.push(`containers on it can reach each other (${ICC_OPTION} is not "false")`);
  if (problems.length > 0) {
    throw new Error(
      `network ${requirement.name} on Docker engine ${host} exists but ${problems.join(" and ")}: ` +
        "remove it so sandpool can create it, or configure another network name",
    );
  }
}
