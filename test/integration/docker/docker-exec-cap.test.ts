/**
 * A files checkpoint is the workspace's tar, printed by a program in the sandbox: a sandbox
 * that prints without end must not fill the gateway host's disk. execToFile stops at its cap,
 * fails and leaves no file; under the cap the file holds every byte. Nor may a program the
 * sandbox's code stops (SIGSTOP: it runs as the code's uid) hold the save up: past its time
 * execToFile fails, and leaves no file.
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

const LIMITS = { maxBytes: 1024 * 1024, timeoutMs: 30_000 };

describe.skipIf(!available)("execToFile's byte cap and deadline", () => {
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
    await expect(execToFile(engine, container, printing(8 * 1024 * 1024), file, LIMITS)).rejects.toThrow(
      /printed more than 1048576 bytes/,
    );
    expect(existsSync(file)).toBe(false);
  });

  it("keeps every byte of a program under the cap", async () => {
    const file = path.join(dir, "under.tar");
    await execToFile(engine, container, printing(512 * 1024), file, LIMITS);
    expect((await stat(file)).size).toBe(512 * 1024);
  });

  it("gives up on a program that stops itself, and leaves no file", async () => {
    const file = path.join(dir, "stopped.tar");
    const stopped = {
      Cmd: ["sh", "-c", "head -c 1000 /dev/zero; kill -STOP $$; cat /dev/zero"],
      User: "10001",
    };
    const began = Date.now();
    await expect(
      execToFile(engine, container, stopped, file, { ...LIMITS, timeoutMs: 1_000 }),
    ).rejects.toThrow(/abort/i);
    expect(Date.now() - began).toBeLessThan(10_000);
    expect(existsSync(file)).toBe(false);
  });
});
