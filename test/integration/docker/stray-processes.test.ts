/**
 * Pooled docker sandboxes run their server with --reap-strays: a CPU burner started with
 * `setsid nohup ... &` is gone once the call returns, so it cannot burn the sandbox's CPU
 * while no call is being charged (measured from outside, in the container's cgroup), and a
 * process the persistent interpreter started in a new session is gone too while the
 * interpreter's state survives.
 *
 * Needs a Docker engine and the image: skipped with a warning locally, fails under CI=true.
 * Everything it creates carries a per-file deployment label and is removed in afterAll.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import { dockerHostsFromEnv } from "../../../src/runtime/docker/docker-runtime-options.js";
import type { StartedSandbox } from "../../../src/runtime/sandbox-runtime.js";
import { ContractClient } from "../../support/contract-client.js";
import { dockerSuiteAvailable, removeDeploymentContainers } from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

const IMAGE = "sandpool/sandbox:dev";

const available = await dockerSuiteAvailable(IMAGE);

const deployment = `test-strays-${randomBytes(4).toString("hex")}`;

describe.skipIf(!available)("docker sandboxes end what a call leaves behind", () => {
  let socketDir: string;
  let runtime: DockerRuntime;
  let sandbox: StartedSandbox;
  let client: ContractClient;
  /** The server serves one session per container, as pooled sandboxes do: both tests share it. */
  let id: string;

  beforeAll(async () => {
    socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
    runtime = new DockerRuntime({
      hosts: dockerHostsFromEnv(process.env),
      deployment,
      socketDir,
      execTimeoutCeilingSeconds: 60,
      maxFileBytes: 1024 * 1024,
    });
    sandbox = await runtime.start({
      sandboxId: `sbx-${randomBytes(6).toString("hex")}`,
      pool: {
        name: "strays",
        image: IMAGE,
        resourceClass: "standard",
        minIdle: 0,
        maxTotal: 1,
        warmupConcurrency: 1,
        coldStartTimeoutMs: 30_000,
      },
      deadline: Date.now() + 30_000,
    });
    client = new ContractClient(sandbox.endpoint);
    id = await newSession(client);
  }, 60_000);

  afterAll(async () => {
    await removeDeploymentContainers(deployment);
    await runtime?.close();
    if (socketDir) await rm(socketDir, { recursive: true, force: true });
  });

  const cpuSeconds = async () => (await runtime.usage(sandbox.runtimeId))!.cpuSeconds;

  it("a setsid'd CPU burner is gone when its call returns: the cgroup's CPU stays still", async () => {
    const started = await client.run(id, "bash_code_execution", {
      command: "setsid nohup python3 -c 'while 1: pass' >/dev/null 2>&1 & sleep 0.5; echo started",
    });
    expect(started.stdout).toBe("started\n");
    const from = await cpuSeconds();
    await sleep(1_500);
    // A burner left running would add about 1.5 s (it has a whole CPU to itself).
    expect((await cpuSeconds()) - from).toBeLessThan(0.3);
    const left = await client.run(id, "bash_code_execution", {
      command:
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c 'whil[e] 1' || true",
    });
    expect(left.stdout.trim()).toBe("0");
  });

  it("a child started in a new session from Python is killed; the interpreter keeps its state", async () => {
    await client.run(id, "code_execution", {
      code: "import os, subprocess\nkept = 41\nchild = subprocess.Popen(['sleep', '1000'], start_new_session=True)\ninterpreter = os.getpid()",
    });
    const next = await client.run(id, "code_execution", {
      code: "print(kept + 1, os.getpid() == interpreter, child.wait(timeout=5))",
    });
    expect(next.stderr).toBe("");
    expect(next.stdout).toBe("42 True -9\n");
  });
});
