/**
 * The Docker engines of this host, by index: where a sandbox is placed (the least loaded
 * engine that has its image), which engine and container a runtime id names, and what is
 * asked of every engine at once.
 */
import { dockerMessageOf, dockerStatusOf } from "./docker-api-errors.js";
import { DockerEngine } from "./docker-engine.js";
import type { DockerRuntimeOptions } from "./docker-runtime-options.js";

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

export class DockerEngines {
  readonly all: DockerEngine[];

  constructor(private readonly options: DockerRuntimeOptions) {
    this.all = options.hosts.map(
      (host, index) =>
        new DockerEngine(index, host, options.engineDownMs, options.engineRequestTimeoutMs, options.tls),
    );
  }

  /**
   * Least loaded engine (running containers + starts in flight) among those with the image.
   * The load is asked only when there is a choice: one engine up takes the start either way.
   */
  async place(image: string): Promise<DockerEngine> {
    const candidates = this.all.filter((engine) => engine.up);
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
      ...this.all
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

  /** The engine and container a runtime id (`<engine index>:<container id>`) names, if any. */
  locate(runtimeId: string): { engine: DockerEngine; containerId: string } | undefined {
    const match = /^(\d+):([0-9a-f]{12,64})$/.exec(runtimeId);
    if (!match) return undefined;
    const engine = this.all[Number(match[1])];
    return engine ? { engine, containerId: match[2]! } : undefined;
  }

  /** Removes the container of that name on every engine that answers; none is not an error. */
  async removeByName(name: string): Promise<void> {
    await Promise.all(
      this.all
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

  /**
   * An engine's data root (`docker info`), where it restores checkpoints from, asked once per
   * engine. Only an engine whose data root is this host's (a local socket) can restore memory.
   */
  private readonly dataRoots = new Map<number, Promise<string>>();
  dataRoot(engine: DockerEngine): Promise<string> {
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

  close(): void {
    for (const engine of this.all) engine.close();
  }
}
