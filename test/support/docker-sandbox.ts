/**
 * One pooled-style docker sandbox for a suite: a DockerRuntime under a per-file deployment
 * label, one started sandbox and a contract client for it. `close` removes everything the
 * deployment label marks, whatever state a failed test left it in.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Isolation } from "../../src/policy-schema/isolation-levels.js";
import { DockerRuntime } from "../../src/runtime/docker/docker-runtime.js";
import { dockerHostsFromEnv } from "../../src/runtime/docker/docker-runtime-options.js";
import type { StartedSandbox } from "../../src/runtime/sandbox-runtime.js";
import { ContractClient } from "./contract-client.js";
import { removeDeploymentContainers, SANDBOX_IMAGE } from "./docker-suite.js";

export interface DockerSandbox {
  runtime: DockerRuntime;
  sandbox: StartedSandbox;
  client: ContractClient;
  close(): Promise<void>;
}

export async function startDockerSandbox(
  name: string,
  image = SANDBOX_IMAGE,
  /** The pool's isolation (container by default; gvisor runs it on the engine's runsc). */
  isolation: Isolation = "container",
): Promise<DockerSandbox> {
  const deployment = `test-${name}-${randomBytes(4).toString("hex")}`;
  // Short: a Unix socket's path is at most 107 bytes.
  const socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
  const runtime = new DockerRuntime({
    hosts: dockerHostsFromEnv(process.env),
    deployment,
    socketDir,
    execTimeoutCeilingSeconds: 60,
    maxFileBytes: 1024 * 1024,
  });
  const close = async () => {
    await removeDeploymentContainers(deployment);
    await runtime.close();
    await rm(socketDir, { recursive: true, force: true });
  };
  try {
    const sandbox = await runtime.start({
      sandboxId: `sbx-${randomBytes(6).toString("hex")}`,
      pool: {
        name,
        image,
        resourceClass: "standard",
        minIdle: 0,
        maxTotal: 1,
        warmupConcurrency: 1,
        coldStartTimeoutMs: 30_000,
        isolation,
      },
      deadline: Date.now() + 30_000,
    });
    return { runtime, sandbox, client: new ContractClient(sandbox.endpoint), close };
  } catch (error) {
    await close();
    throw error;
  }
}
