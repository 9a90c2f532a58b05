/**
 * The docker runtime against a real engine and the built sandbox image: a sandbox answers
 * the contract over its Unix socket, is hardened the way container-spec.ts says (checked by
 * inspecting the container, not by trusting the spec), reaches nothing (probed from inside),
 * and is destroyed idempotently.
 *
 * Network rule: nothing here talks to anything but loopback, the host's own addresses on the
 * engine's bridges, and the containers this file creates. Everything it creates carries a
 * per-file deployment label and is removed in afterAll.
 *
 * Needs a Docker engine and the image: skipped with a warning locally, fails under CI=true.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { codeMaxProcesses, codeUidOf } from "../../../src/runtime/docker/container-spec.js";
import { SandboxImageMissingError } from "../../../src/runtime/docker/docker-engines.js";
import { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import {
  DockerEnginesUnreachableError,
  type StartTimings,
} from "../../../src/runtime/docker/docker-runtime-answers.js";
import { dockerHostsFromEnv, parseDockerHost } from "../../../src/runtime/docker/docker-runtime-options.js";
import type { PoolSpec, StartedSandbox } from "../../../src/runtime/sandbox-runtime.js";
import { ContractClient } from "../../support/contract-client.js";
import { countDockerCalls } from "../../support/docker-call-counter.js";
import {
  dockerSuiteAvailable,
  gvisorSuiteAvailable,
  removeDeploymentContainers,
} from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

const IMAGE = "sandpool/sandbox:dev";
const run = promisify(execFile);
const MIB = 1024 * 1024;

const available = await dockerSuiteAvailable(IMAGE);
/** gVisor keeps the cpuset too: checked where the engine has runsc (always in CI). */
const gvisor = available && (await gvisorSuiteAvailable(IMAGE));

const suffix = randomBytes(4).toString("hex");
const deployment = `test-${suffix}`;
/** Short: a Unix socket's path is at most 107 bytes. */
const socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
const hosts = dockerHostsFromEnv(process.env);
const docker = new Dockerode();

function pool(name: string, image = IMAGE): PoolSpec {
  return {
    name,
    egress: name === "egress",
    image,
    resourceClass: "standard",
    minIdle: 0,
    maxTotal: 4,
    warmupConcurrency: 1,
    coldStartTimeoutMs: 30_000,
  };
}
const deadlineIn = (ms: number) => Date.now() + ms;
const containerIdOf = (runtimeId: string) => runtimeId.slice(runtimeId.indexOf(":") + 1);
const sandboxIdOf = (info: Dockerode.ContainerInspectInfo) => info.Config.Labels["sandpool.sandbox"]!;
const newSandboxId = () => `sbx-${randomBytes(6).toString("hex")}`;

interface ExecResult {
  stdout: string;
  stderr: string;
  return_code: number;
}
async function python(client: ContractClient, sessionId: string, code: string): Promise<ExecResult> {
  const result = (await client.run(sessionId, "code_execution", { code })) as ExecResult;
  expect(result.stderr).toBe("");
  return result;
}

/** Prints where a TCP connect from inside the sandbox ends: connected, timeout, or an errno name. */
const connectProbe = (host: string, port: number, timeoutSeconds = 1) => `
import errno, socket
try:
    socket.create_connection((${JSON.stringify(host)}, ${port}), timeout=${timeoutSeconds}).close()
    print("connected")
except socket.timeout:
    print("timeout")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
`;

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(50);
  }
}

describe.skipIf(!available)("DockerRuntime", () => {
  let runtime: DockerRuntime;
  let sandbox: StartedSandbox;
  let timings: StartTimings;
  let client: ContractClient;
  let sessionId: string;
  const extraRuntimes: DockerRuntime[] = [];

  function makeRuntime(overrides: Partial<ConstructorParameters<typeof DockerRuntime>[0]> = {}) {
    const created = new DockerRuntime({
      hosts,
      deployment,
      socketDir,
      execTimeoutCeilingSeconds: 120,
      maxFileBytes: 10 * MIB,
      ...overrides,
    });
    extraRuntimes.push(created);
    return created;
  }

  /** The uid user code runs as in the sandbox: one of its own (container-spec.ts). */
  let codeUid: number;

  beforeAll(async () => {
    runtime = makeRuntime();
    const sandboxId = newSandboxId();
    codeUid = codeUidOf(sandboxId);
    const started = await runtime.startTimed({
      sandboxId,
      pool: pool("py"),
      deadline: deadlineIn(30_000),
    });
    sandbox = started.sandbox;
    timings = started.timings;
    client = new ContractClient(sandbox.endpoint);
    sessionId = await newSession(client);
  });

  afterAll(async () => {
    // Everything this file made, whatever state a failed test left it in.
    await removeDeploymentContainers(deployment);
    for (const created of extraRuntimes) await created.close();
    await rm(socketDir, { recursive: true, force: true });
  });

  it("keeps owners of one deployment apart on one engine: each lists, and sweeps, only its own", async () => {
    const [a, b] = [makeRuntime({ owner: "node-a" }), makeRuntime({ owner: "node-b" })];
    const ids = [newSandboxId(), newSandboxId()];
    const started = await Promise.all(
      [a, b].map((owned, i) =>
        owned.start({ sandboxId: ids[i]!, pool: pool("py"), deadline: deadlineIn(30_000) }),
      ),
    );
    try {
      const listed = await Promise.all(
        [a, b].map(async (owned) => {
          const sandboxes = await owned.list();
          await owned.tidy(sandboxes);
          return sandboxes.map((s) => s.sandboxId);
        }),
      );
      expect(listed[0]).toEqual([ids[0]]);
      expect(listed[1]).toEqual([ids[1]]);
      // Each owner's sockets live in a folder of its own: a's sweep left b's answering.
      expect(started[0]!.endpoint).toContain(`/${deployment}/node-a/`);
      expect(started[1]!.endpoint).toContain(`/${deployment}/node-b/`);
      expect((await new ContractClient(started[1]!.endpoint).request("GET", "/health")).status).toBe(200);
      const labels = (await docker.getContainer(containerIdOf(started[1]!.runtimeId)).inspect()).Config
        .Labels;
      expect(labels).toMatchObject({ "sandpool.deployment": deployment, "sandpool.owner": "node-b" });
    } finally {
      await Promise.all([a.destroy(started[0]!.runtimeId), b.destroy(started[1]!.runtimeId)]);
    }
  });

  it("starts a sandbox that answers the contract: python runs as the sandbox's own uid, group 10001", async () => {
    expect(runtime.kind).toBe("docker");
    expect(runtime.isolated).toBe(true);
    expect(sandbox.runtimeId).toMatch(/^\d+:[0-9a-f]{64}$/);
    expect(timings.totalMs).toBeLessThan(30_000);
    expect(codeUid).toBeGreaterThanOrEqual(2 ** 20);
    const result = await python(
      client,
      sessionId,
      "import os\nprint(6 * 7, os.getresuid(), os.getresgid(), os.getgroups())",
    );
    const ids = `(${codeUid}, ${codeUid}, ${codeUid})`;
    expect(result).toMatchObject({ stdout: `42 ${ids} (10001, 10001, 10001) []\n`, return_code: 0 });
  });

  it("keeps the server out of user code's reach: no capability, no signal, no trace, its own process cap", async () => {
    const result = await client.run(sessionId, "bash_code_execution", {
      command: [
        // The server (bash's parent): root's real and saved uid, the code's effective uid,
        // nothing effective.
        "server=$PPID",
        "grep -E '^(Uid|CapEff)' /proc/$server/status | tr -s '\\t' ' '",
        // User code: the code's uid everywhere, no capability at all, the OOM killer's first pick.
        "grep -E '^(Uid|CapInh|CapPrm|CapEff|CapAmb)' /proc/self/status | tr -s '\\t' ' '",
        "cat /proc/self/oom_score_adj; ulimit -u; cut -d' ' -f19 /proc/self/stat",
        "kill -0 $server 2>&1 | sed 's/.* - //'",
        "kill -STOP $server 2>&1 | sed 's/.* - //'",
        "cat /proc/$server/environ >/dev/null 2>&1 || echo no environ",
      ].join("; "),
    });
    expect(result.stderr).toBe("");
    expect(result.stdout.split("\n")).toEqual([
      `Uid: 0 ${codeUid} 0 ${codeUid}`,
      "CapEff: 0000000000000000",
      `Uid: ${codeUid} ${codeUid} ${codeUid} ${codeUid}`,
      "CapInh: 0000000000000000",
      "CapPrm: 0000000000000000",
      "CapEff: 0000000000000000",
      "CapAmb: 0000000000000000",
      "1000",
      String(codeMaxProcesses(256)),
      "10",
      "Operation not permitted",
      "Operation not permitted",
      "no environ",
      "",
    ]);
  });

  it("is hardened: docker inspect shows the limits and no way out", async () => {
    const info = await docker.getContainer(containerIdOf(sandbox.runtimeId)).inspect();
    const host = info.HostConfig;
    expect(host.CapDrop).toEqual(["ALL"]);
    // Only for the server to drop to the code's uid: no process of user code holds them.
    expect(host.CapAdd).toEqual(["SETUID", "SETGID"]);
    expect(host.SecurityOpt).toContain("no-new-privileges");
    expect(host.Privileged).toBe(false);
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.PidsLimit).toBe(256);
    expect(host.Memory).toBe(512 * MIB);
    expect(host.MemorySwap).toBe(host.Memory);
    expect(host.NanoCpus).toBe(1_000_000_000);
    // Root only to start: the server keeps root as its real uid alone (see the test above).
    expect(info.Config.User).toBe("0:0");
    expect(host.Init ?? false).toBe(false);
    expect((host as { CgroupnsMode?: string }).CgroupnsMode).toBe("private");
    expect(host.IpcMode).toBe("private");
    expect(info.Config.Healthcheck?.Test).toEqual(["NONE"]);
    // One mount: the sandbox's own socket directory. Never the Docker socket.
    expect(host.Binds ?? []).toEqual([]);
    const socketDirOfSandbox = path.join(socketDir, deployment, sandboxIdOf(info));
    expect(info.Mounts).toEqual([
      expect.objectContaining({ Type: "bind", Source: socketDirOfSandbox, Destination: "/run/sandpool" }),
    ]);
    expect(JSON.stringify([host, info.Mounts])).not.toContain("docker.sock");
    expect(host.Tmpfs).toMatchObject({
      "/home/sandbox/sessions": expect.stringContaining(
        `size=${256 * MIB},uid=${codeUid},gid=10001,mode=0700`,
      ),
      "/tmp": expect.stringContaining("noexec"),
    });
    // No network at all: nothing published, no address, reached through its socket.
    expect(host.NetworkMode).toBe("none");
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual(["none"]);
    expect(info.NetworkSettings.Networks.none?.IPAddress ?? "").toBe("");
    expect(sandbox.endpoint).toBe(`unix:${socketDirOfSandbox}/sandbox.sock`);
    expect(Object.values(info.NetworkSettings.Ports ?? {}).flat()).toEqual([]);
    expect(Object.values(host.PortBindings ?? {}).flat()).toEqual([]);
    expect(info.Config.Labels).toMatchObject({
      "sandpool.deployment": deployment,
      "sandpool.pool": "py",
      "sandpool.engine": hosts[0],
    });
    // The gateway owns lifetimes and ceilings: the server is told so on its command line.
    expect(info.Config.Cmd).toEqual(
      expect.arrayContaining(["--max-exec-timeout", "120", "--max-upload-bytes", String(10 * MIB)]),
    );
    expect(info.Config.Cmd?.join(" ")).toContain("--max-lifetime-ceiling 31536000");
    expect(info.Config.Cmd?.join(" ")).toContain(
      `--code-user ${codeUid}:10001 --code-max-processes ${codeMaxProcesses(256)}`,
    );
    // tini from the image is PID 1.
    expect(info.Path).toBe("/usr/bin/tini");
  });

  it("runs its code on the CPUs sandboxCpus gives, on runc and gVisor alike, and on all of the host's when none are given", async () => {
    const affinity = "import os\nprint(sorted(os.sched_getaffinity(0)))";
    const everyCpu = os.cpus().map((_, cpu) => cpu);
    expect((await python(client, sessionId, affinity)).stdout).toBe(
      `${JSON.stringify(everyCpu).replaceAll(",", ", ")}\n`,
    );
    const confined = makeRuntime({ sandboxCpus: "0" });
    for (const isolation of gvisor ? (["container", "gvisor"] as const) : (["container"] as const)) {
      const started = await confined.start({
        sandboxId: newSandboxId(),
        pool: { ...pool("py"), isolation },
        deadline: deadlineIn(60_000),
      });
      try {
        const inside = new ContractClient(started.endpoint);
        // Its code cannot widen it: the cpuset is the container's cgroup, not the process's mask.
        const widened = await python(
          inside,
          await newSession(inside),
          `import os\ntry:\n    os.sched_setaffinity(0, ${JSON.stringify(everyCpu)})\nexcept OSError as error:\n    print("refused", error.errno)\nprint(sorted(os.sched_getaffinity(0)))`,
        );
        expect(widened.stdout, isolation).toMatch(/\[0\]\n$/);
        const info = await docker.getContainer(containerIdOf(started.runtimeId)).inspect();
        expect(info.HostConfig.CpusetCpus).toBe("0");
      } finally {
        await confined.destroy(started.runtimeId);
      }
    }
  });

  it("has a read-only root, a writable workspace and /tmp, both size-capped tmpfs owned by the code's uid", async () => {
    const result = await python(
      client,
      sessionId,
      `
import errno, os
def attempt(path):
    try:
        with open(path, "w") as f:
            f.write("x")
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
print(attempt("/home/sandbox/probe"), attempt("/probe"), attempt("/tmp/probe"), attempt("workspace-probe"))
st = os.stat("/home/sandbox/sessions")
vfs = os.statvfs("/home/sandbox/sessions")
print(st.st_uid, st.st_gid, oct(st.st_mode & 0o777), vfs.f_blocks * vfs.f_frsize)
`,
    );
    // /home/sandbox: a read-only root refuses it before any permission check (EROFS).
    const [writes, stat] = result.stdout.trim().split("\n");
    expect(writes).toBe("EROFS EROFS ok ok");
    expect(stat).toBe(`${codeUid} 10001 0o700 ${256 * MIB}`);
  });

  describe("reaches nothing", () => {
    let listener: net.Server;
    let port: number;
    /** Every address this host has on the engine's bridges (docker0 and any other). */
    let bridgeAddresses: string[];

    beforeAll(async () => {
      // A listener on every address of this host: what a careless host service looks like.
      listener = net.createServer((socket) => socket.on("error", () => undefined).end("listener\n"));
      await new Promise<void>((resolve) => listener.listen(0, "0.0.0.0", resolve));
      port = (listener.address() as net.AddressInfo).port;
      // From `ip`: Node lists only interfaces that are up, and docker0 is down while empty.
      const { stdout } = await run("ip", ["-j", "-4", "addr", "show"]);
      bridgeAddresses = (JSON.parse(stdout) as { ifname: string; addr_info: { local: string }[] }[])
        .filter(({ ifname }) => ifname === "docker0" || ifname.startsWith("br-"))
        .flatMap(({ addr_info }) => addr_info.map((a) => a.local));
      expect(bridgeAddresses.length).toBeGreaterThan(0);
      // The positive control: from the host, the listener answers at each of them.
      for (const address of bridgeAddresses) {
        const socket = net.connect(port, address);
        await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
        socket.destroy();
      }
    });

    afterAll(() => new Promise<void>((resolve) => listener.close(() => resolve())));

    it("has no network interface but loopback", async () => {
      const result = await python(
        client,
        sessionId,
        "import socket\nprint(sorted(n for _, n in socket.if_nameindex()))",
      );
      expect(result.stdout.trim()).toBe("['lo']");
    });

    it("cannot connect to a listener on 0.0.0.0 of the host, at any bridge address or loopback", async () => {
      for (const host of [...bridgeAddresses, "127.0.0.1"]) {
        const result = await python(client, sessionId, connectProbe(host, port));
        // Its own loopback refuses; everything else has no route at all.
        expect(["ENETUNREACH", "ECONNREFUSED"]).toContain(result.stdout.trim());
      }
    });

    it("sees only its own socket, and cannot write beside it (the directory is sealed)", async () => {
      const other = await runtime.start({
        sandboxId: newSandboxId(),
        pool: pool("py"),
        deadline: deadlineIn(30_000),
      });
      try {
        // The gateway (this host) reaches the other sandbox; the first sees no trace of it.
        expect(await new ContractClient(other.endpoint).request("GET", "/health")).toMatchObject({
          status: 200,
        });
        const otherSocket = other.endpoint.slice("unix:".length);
        const result = await python(
          client,
          sessionId,
          `
import errno, os, socket
print(os.listdir("/run/sandpool"))
try:
    open("/run/sandpool/filler", "w").write("x")
    print("written")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(${JSON.stringify(otherSocket)})
    print("connected")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
`,
        );
        expect(result.stdout.trim().split("\n")).toEqual(["['sandbox.sock']", "EACCES", "ENOENT"]);
        expect((await stat(path.dirname(otherSocket))).mode & 0o777).toBe(0o555);
      } finally {
        await runtime.destroy(other.runtimeId);
      }
      // Its socket directory goes with it.
      expect(existsSync(path.join(socketDir, deployment))).toBe(true);
    });
  });

  it("list() sees a sandbox, running or not, until it is destroyed; destroy twice is fine", async () => {
    const sandboxId = newSandboxId();
    const started = await runtime.start({ sandboxId, pool: pool("py"), deadline: deadlineIn(30_000) });
    const listed = (await runtime.list()).find((s) => s.runtimeId === started.runtimeId);
    expect(listed).toMatchObject({ sandboxId, pool: "py", running: true });
    expect(Math.abs(listed!.createdAt - Date.now())).toBeLessThan(60_000);
    // A sandbox that died (here: killed behind the runtime's back) is still listed, as not running.
    await docker.getContainer(containerIdOf(started.runtimeId)).kill();
    await waitUntil(
      async () => (await runtime.list()).some((s) => s.runtimeId === started.runtimeId && !s.running),
      10_000,
      "the killed sandbox listed as not running",
    );
    expect(existsSync(path.join(socketDir, deployment, sandboxId))).toBe(true);
    await runtime.destroy(started.runtimeId);
    await runtime.destroy(started.runtimeId);
    expect((await runtime.list()).map((s) => s.runtimeId)).not.toContain(started.runtimeId);
    expect(existsSync(path.join(socketDir, deployment, sandboxId))).toBe(false);
    await expect(docker.getContainer(containerIdOf(started.runtimeId)).inspect()).rejects.toMatchObject({
      statusCode: 404,
    });
    // Ids that are not ours, or of no configured engine, are not an error either.
    await runtime.destroy("7:0123456789abcdef");
    await runtime.destroy("garbage");
  });

  it("a missing image fails fast with a clear message and leaves nothing behind", async () => {
    const sandboxId = newSandboxId();
    const image = `sandpool/no-such-image:${suffix}`;
    const began = Date.now();
    const failure = runtime.start({ sandboxId, pool: pool("py", image), deadline: deadlineIn(30_000) });
    await expect(failure).rejects.toBeInstanceOf(SandboxImageMissingError);
    await expect(failure).rejects.toThrow(
      `image ${image} is missing on every Docker engine: build it with npm run build:sandbox-image`,
    );
    expect(Date.now() - began).toBeLessThan(5_000);
    expect((await runtime.list()).some((s) => s.sandboxId === sandboxId)).toBe(false);
  });

  it("makes three Docker calls per sandbox once its image is known: create, start, remove", async () => {
    const engine = parseDockerHost(hosts[0]!);
    if (engine?.kind !== "unix")
      throw new Error(`the call count needs a local engine socket, not ${hosts[0]}`);
    const counter = await countDockerCalls(engine.socketPath);
    try {
      const counted = makeRuntime({ hosts: [counter.host] });
      // The first start asks whether the engine has the image; the answer is remembered.
      await counted.destroy(
        (await counted.start({ sandboxId: newSandboxId(), pool: pool("py"), deadline: deadlineIn(30_000) }))
          .runtimeId,
      );
      counter.reset();
      const started = await counted.start({
        sandboxId: newSandboxId(),
        pool: pool("py"),
        deadline: deadlineIn(30_000),
      });
      await counted.destroy(started.runtimeId);
      // One engine: no listing for its load. Its own container: no inspect to find its files.
      // A start slower than half a second (a loaded host) looks whether its container still
      // runs now and then (wait-for-sandbox-health.ts): the wait's calls, not the sandbox's.
      const { "GET /containers/:id/json": _aliveChecks, ...calls } = counter.calls();
      expect(calls).toEqual({
        "POST /containers/create": 1,
        "POST /containers/:id/start": 1,
        "DELETE /containers/:id": 1,
      });
    } finally {
      await counter.close();
    }
  });

  it("an image removed after a start was placed on it: the next create fails, the one after says it is missing", async () => {
    const image = `sandpool/sandbox-removed:${suffix}`;
    await docker.getImage(IMAGE).tag({ repo: "sandpool/sandbox-removed", tag: suffix });
    const seeing = makeRuntime();
    try {
      const first = await seeing.start({
        sandboxId: newSandboxId(),
        pool: pool("py", image),
        deadline: deadlineIn(30_000),
      });
      await seeing.destroy(first.runtimeId);
    } finally {
      // The tag only: the image it names stays.
      await docker.getImage(image).remove();
    }
    await expect(
      seeing.start({ sandboxId: newSandboxId(), pool: pool("py", image), deadline: deadlineIn(30_000) }),
    ).rejects.toThrow(/No such image/);
    await expect(
      seeing.start({ sandboxId: newSandboxId(), pool: pool("py", image), deadline: deadlineIn(30_000) }),
    ).rejects.toBeInstanceOf(SandboxImageMissingError);
  });

  it("honours the start deadline and removes what it started", async () => {
    const late = newSandboxId();
    await expect(
      runtime.start({ sandboxId: late, pool: pool("py"), deadline: Date.now() - 1 }),
    ).rejects.toThrow(/deadline/);
    const tight = newSandboxId();
    const began = Date.now();
    // Long enough to create and start the container, too short for the server to answer.
    await expect(
      runtime.start({ sandboxId: tight, pool: pool("py"), deadline: began + 100 }),
    ).rejects.toThrow(/deadline/);
    expect(Date.now() - began).toBeLessThan(3_000);
    const left = (await runtime.list()).filter((s) => s.sandboxId === late || s.sandboxId === tight);
    expect(left).toEqual([]);
  });

  it("skips an engine that does not answer, reports it, and list() refuses to be partial", async () => {
    const missingSocket = `unix:///tmp/sandpool-no-engine-${suffix}.sock`;
    const twoEngines = makeRuntime({ hosts: [missingSocket, ...hosts] });
    const sandboxId = newSandboxId();
    const started = await twoEngines.start({ sandboxId, pool: pool("py"), deadline: deadlineIn(30_000) });
    try {
      expect(started.runtimeId.startsWith("1:")).toBe(true);
      const engines = await twoEngines.engines();
      expect(engines[0]).toMatchObject({ host: missingSocket, up: false, containers: 0 });
      expect(engines[0]?.problem).toMatch(/ENOENT/);
      expect(engines[1]).toMatchObject({ host: hosts[0], up: true });
      expect(engines[1]?.containers).toBeGreaterThanOrEqual(2);
      const listing = await twoEngines.list().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(listing).toBeInstanceOf(DockerEnginesUnreachableError);
      const partial = (listing as DockerEnginesUnreachableError).partial;
      expect(partial).toContainEqual(
        expect.objectContaining({ runtimeId: started.runtimeId, sandboxId, pool: "py" }),
      );
    } finally {
      await twoEngines.destroy(started.runtimeId);
    }
  });
});
