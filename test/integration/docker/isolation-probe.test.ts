/**
 * serve's isolation gate against the real engine: a probe sandbox of a container pool and of
 * a gvisor pool each pass (the gvisor one shown, from inside, to run on gVisor's kernel); a
 * "gvisor" pool whose runtime is really runc is caught within seconds; an engine without the
 * pool's runtime is named with the daemon.json lines to add.
 *
 * Needs a Docker engine with gVisor registered (scripts/start-docker.sh) and the image:
 * skipped with a warning locally, fails under CI=true.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SandboxClient } from "../../../src/forward/sandbox-client.js";
import type { Isolation } from "../../../src/policy-schema/isolation-levels.js";
import { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import { dockerHostsFromEnv } from "../../../src/runtime/docker/docker-runtime-options.js";
import { missingRuntimeProblems, probeIsolation } from "../../../src/runtime/docker/isolation-check.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import {
  gvisorSuiteAvailable,
  removeDeploymentContainers,
  SANDBOX_IMAGE,
} from "../../support/docker-suite.js";

const available = await gvisorSuiteAvailable();
const deployment = `test-probe-${randomBytes(4).toString("hex")}`;
const socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
const runtimes: DockerRuntime[] = [];
const client = new SandboxClient();

function runtimeWith(settings: { gvisorRuntime?: string } = {}): DockerRuntime {
  const runtime = new DockerRuntime({
    hosts: dockerHostsFromEnv(process.env),
    deployment,
    socketDir,
    preloadModules: [],
    ...settings,
  });
  runtimes.push(runtime);
  return runtime;
}

function pool(isolation: Isolation): PoolSpec {
  return {
    name: isolation,
    image: SANDBOX_IMAGE,
    resourceClass: "standard",
    minIdle: 0,
    maxTotal: 1,
    warmupConcurrency: 1,
    coldStartTimeoutMs: 30_000,
    isolation,
  };
}

describe.skipIf(!available)("the isolation probe", () => {
  afterAll(async () => {
    await removeDeploymentContainers(deployment);
    for (const runtime of runtimes) await runtime.close();
    await client.close();
    await rm(socketDir, { recursive: true, force: true });
  });

  it.each(["container", "gvisor"] as const)("passes for a %s pool", async (isolation) => {
    await probeIsolation(runtimeWith(), client, pool(isolation), 20_000);
  });

  it("catches, within seconds, a gvisor pool that runs on the host's kernel", async () => {
    // The engine's runc under gVisor's name: the container starts and answers, but on the host's kernel.
    const began = Date.now();
    await expect(
      probeIsolation(runtimeWith({ gvisorRuntime: "runc" }), client, pool("gvisor"), 20_000),
    ).rejects.toThrow(/does not run on gVisor's kernel/);
    expect(Date.now() - began).toBeLessThan(15_000);
  });

  it("names the daemon.json lines when the engine lacks the gvisor pool's runtime", async () => {
    const runtime = runtimeWith({ gvisorRuntime: "runsc-missing" });
    const engines = await runtime.registeredRuntimes();
    expect(engines[0]?.runtimes?.runsc).toBeDefined();
    const problems = missingRuntimeProblems(engines, [pool("container"), pool("gvisor")], runtime.options);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/has no OCI runtime 'runsc-missing'.*pool\(s\) gvisor/);
    expect(problems[0]).toContain('"runtimes":{"runsc-missing":{"path":"/usr/bin/runsc","runtimeArgs":');
    expect(missingRuntimeProblems(engines, [pool("gvisor")], runtimeWith().options)).toEqual([]);
  });
});
