/**
 * A files checkpoint is the workspace's tar, printed by a program in the sandbox: a sandbox
 * that prints without end must not fill the gateway host's disk. execToFile stops at its cap,
 * fails and leaves no file; under the cap the file holds every byte.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockerEngine } from "../../../src/runtime/docker/docker-engine.js";
import { execToFile } from "../../../src/runtime/docker/docker-exec.js";
import {
  dockerSuiteAvailable,
  removeDeploymentContainers,
  SANDBOX_IMAGE,
} from "../../support/docker-suite.js";

const available = await dockerSuiteAvailable();
const DEPLOYMENT = `exec-cap-${process.pid}`;

describe.skipIf(!available)("execToFile's byte cap", () => {
  const engine = new DockerEngine(0, "unix:///var/run/docker.sock", 1_000, 30_000);
  let container: Dockerode.Container;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "sandpool-exec-cap-"));
    container = await new Dockerode().createContainer({
      Image: SANDBOX_IMAGE,
      Entrypoint: ["sleep", "300"],
      Labels: { "sandpool.deployment": DEPLOYMENT },
      HostConfig: { NetworkMode: "none" },
    });
    await container.start();
  });

  afterAll(async () => {
    await removeDeploymentContainers(DEPLOYMENT);
    await rm(dir, { recursive: true, force: true });
  });

  const printing = (bytes: number) => ({ Cmd: ["head", "-c", String(bytes), "/dev/zero"], User: "10001" });

  it("refuses a program that prints more than the cap and leaves no file", async () => {
    const file = path.join(dir, "over.tar");
    await expect(execToFile(engine, container, printing(8 * 1024 * 1024), file, 1024 * 1024)).rejects.toThrow(
      /printed more than 1048576 bytes/,
    );
    expect(existsSync(file)).toBe(false);
  });

  it("keeps every byte of a program under the cap", async () => {
    const file = path.join(dir, "under.tar");
    await execToFile(engine, container, printing(512 * 1024), file, 1024 * 1024);
    expect((await stat(file)).size).toBe(512 * 1024);
  });
});
