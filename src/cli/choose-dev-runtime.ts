/**
 * Dev mode's runtime: the docker runtime when a Docker engine answers and has the sandbox
 * image, else the process runtime, which is not isolated and says so. `--runtime` forces
 * one; a forced docker runtime that cannot work is an error, not a silent fallback.
 */
import { createHash } from "node:crypto";
import os from "node:os";
import path from "node:path";
import type { Logger } from "pino";
import { DockerRuntime } from "../runtime/docker/docker-runtime.js";
import { ProcessRuntime } from "../runtime/process/process-runtime.js";
import type { SandboxRuntime } from "../runtime/sandbox-runtime.js";
import { resolvePythonExecutable } from "../sandbox/tools/resolve-python.js";

export type DevRuntimeChoice = "auto" | "docker" | "process";

export interface DevRuntimeOptions {
  choice: DevRuntimeChoice;
  image: string;
  /** Images pooled too when the engine has them (the data-science one); never required. */
  optionalImages?: readonly string[];
  dataDir: string;
  python: string;
  execTimeoutCeilingSeconds: number;
  maxFileBytes: number;
  log: Logger;
}

export async function chooseDevRuntime(
  options: DevRuntimeOptions,
): Promise<{ runtime: SandboxRuntime; why: string; optionalImages: string[] }> {
  if (options.choice !== "process") {
    const docker = new DockerRuntime(
      {
        deployment: "dev",
        socketDir: devSocketDir(options.dataDir),
        execTimeoutCeilingSeconds: options.execTimeoutCeilingSeconds,
        maxFileBytes: options.maxFileBytes,
      },
      options.log,
    );
    if (await docker.imageAvailable(options.image)) {
      const optionalImages: string[] = [];
      for (const image of options.optionalImages ?? []) {
        if (await docker.imageAvailable(image)) optionalImages.push(image);
      }
      return { runtime: docker, why: "a Docker engine has the image", optionalImages };
    }
    await docker.close();
    if (options.choice === "docker") {
      throw new Error(
        `--runtime docker: no Docker engine answers with the image ${options.image} (start one with ` +
          "bash scripts/start-docker.sh, build the image with npm run build:sandbox-image)",
      );
    }
  }
  const runtime = new ProcessRuntime({
    rootDir: path.join(options.dataDir, "sandboxes"),
    python: await resolvePythonExecutable(options.python),
    execTimeoutCeilingSeconds: options.execTimeoutCeilingSeconds,
    maxFileBytes: options.maxFileBytes,
    log: options.log,
  });
  // Child processes run the host's Python: an image name would promise modules it may lack.
  return {
    runtime,
    optionalImages: [],
    why:
      options.choice === "process" ? "asked for with --runtime process" : "no Docker engine with the image",
  };
}

/**
 * Dev sandboxes' socket directories: under the data directory, unless its path is too long
 * for a Unix socket (Linux allows 107 bytes), then a short one in the temporary directory,
 * named after the data directory so two dev gateways never share it.
 */
export function devSocketDir(dataDir: string): string {
  const preferred = path.resolve(dataDir, "sockets");
  if (Buffer.byteLength(preferred) <= 60) return preferred;
  const tag = createHash("sha256").update(preferred).digest("hex").slice(0, 12);
  return path.join(os.tmpdir(), `sandpool-${tag}`);
}
