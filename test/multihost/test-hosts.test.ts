/**
 * The multi-host test infrastructure itself (test/support/test-hosts.ts): two test hosts,
 * each a network namespace with its own Docker engine. Each engine runs a sandbox of the
 * sandbox image (NetworkMode none) through the project's docker runtime and it answers over
 * its socket; a server spawned in host A on its address is reached from the root namespace
 * and from host B, one on A's loopback is not; cut() partitions A and restore() ends it; a
 * second start sweeps what an unclosed run left and finds the images cached; close() leaves
 * nothing behind. Start-up times are printed (cold with an image load, and warm).
 *
 * Network rule: nothing here leaves the test network (10.213.0.0/24, our own namespaces) or
 * loopback; the hosts have no default route, which a test checks with `ip route get`
 * (a routing-table lookup, no packet).
 *
 * Needs root, ip, nsenter, dockerd and the sandbox image on the main engine: skipped loudly
 * locally, fails under CI=true.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import Dockerode from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockerRuntime } from "../../src/runtime/docker/docker-runtime.js";
import type { PoolSpec } from "../../src/runtime/sandbox-runtime.js";
import { ContractClient } from "../support/contract-client.js";
import { SANDBOX_IMAGE } from "../support/docker-suite.js";
import { newSession } from "../support/sandbox-server.js";
import { runCommand } from "../support/test-hosts/run-command.js";
import {
  type HostProcess,
  noLeftovers,
  probeTcp,
  startTestHosts,
  type TestHosts,
  type TestHostsTimings,
  testHostsAvailable,
} from "../support/test-hosts.js";
import { waitFor } from "../support/wait-for.js";

const available = await testHostsAvailable();
const deployment = `test-hosts-${randomBytes(4).toString("hex")}`;
const PUBLIC_PORT = 7301;
const LOOPBACK_PORT = 7302;

const pool: PoolSpec = {
  name: "py",
  image: SANDBOX_IMAGE,
  resourceClass: "standard",
  minIdle: 0,
  maxTotal: 2,
  warmupConcurrency: 1,
  coldStartTimeoutMs: 60_000,
};

/** A node one-liner: a TCP server on each host:port given, printing "listening" once all are up. */
const serverScript = (listeners: [string, number][]) => `
const net = require("node:net");
let up = 0;
for (const [host, port] of ${JSON.stringify(listeners)}) {
  net.createServer((s) => s.on("error", () => {}).end("hello\\n")).listen(port, host, () => {
    if (++up === ${listeners.length}) console.log("listening");
  });
}
`;

function report(what: string, timings: TestHostsTimings): void {
  const hosts = timings.hosts
    .map(
      (h, i) =>
        `host ${i}: network ${h.networkMs} ms, engine ${h.engineMs} ms, images ${h.imagesMs} ms` +
        (h.loaded.length > 0 ? ` (loaded ${h.loaded.join(", ")})` : " (cached)"),
    )
    .join("; ");
  process.stderr.write(
    `test-hosts: start-up ${what}: ${(timings.totalMs / 1000).toFixed(1)} s (sweep ${timings.sweepMs} ms; ${hosts})\n`,
  );
}

describe.skipIf(!available)("test hosts: Docker engines in network namespaces", () => {
  let hosts: TestHosts;
  let second: TestHosts | undefined;
  let server: HostProcess;
  let socketDir: string;
  const runtimes: DockerRuntime[] = [];

  beforeAll(async () => {
    socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
    hosts = await startTestHosts(2);
    report(
      hosts.timings.hosts.some((h) => h.loaded.length > 0) ? "first, with image load" : "first (cache warm)",
      hosts.timings,
    );
    const [a] = hosts.hosts;
    server = a!.spawn(process.execPath, [
      "-e",
      serverScript([
        [a!.address, PUBLIC_PORT],
        ["127.0.0.1", LOOPBACK_PORT],
      ]),
    ]);
    await server.waitForOutput(/listening/, 10_000);
  });

  afterAll(async () => {
    for (const runtime of runtimes) await runtime.close();
    await second?.close();
    await hosts?.close();
    await rm(socketDir, { recursive: true, force: true });
  });

  it("gives every host its own engine, which runs a sandbox with no network that answers over its socket", async () => {
    const main = new Dockerode();
    for (const host of hosts.hosts) {
      expect(host.dockerHost).toBe(`unix://${host.runDir}/docker.sock`);
      const runtime = new DockerRuntime({
        hosts: [host.dockerHost],
        deployment,
        socketDir: path.join(socketDir, String(host.index)),
        execTimeoutCeilingSeconds: 60,
        maxFileBytes: 1024 * 1024,
      });
      runtimes.push(runtime);
      const sandbox = await runtime.start({
        sandboxId: `sbx-${host.index}-${randomBytes(4).toString("hex")}`,
        pool,
        deadline: Date.now() + 60_000,
      });
      const client = new ContractClient(sandbox.endpoint);
      const session = await newSession(client);
      const result = (await client.run(session, "code_execution", { code: "print(6 * 7)" })) as {
        stdout: string;
        return_code: number;
      };
      expect(result).toMatchObject({ stdout: "42\n", return_code: 0 });
      // On this host's engine, with no network; not on the main engine.
      const [listed] = await host.engine.listContainers({
        filters: { label: [`sandpool.deployment=${deployment}`] },
      });
      expect(listed?.HostConfig.NetworkMode).toBe("none");
      expect(listed?.Labels["sandpool.engine"]).toBe(host.dockerHost);
      const onMain = await main.listContainers({
        all: true,
        filters: { label: [`sandpool.deployment=${deployment}`] },
      });
      expect(onMain).toEqual([]);
      expect(
        await host.docker(["ps", "-q", "--filter", `label=sandpool.deployment=${deployment}`]),
      ).toContain(listed!.Id.slice(0, 12));
      await runtime.destroy(sandbox.runtimeId);
    }
    // Two engines, two data roots.
    const [a, b] = await Promise.all(
      hosts.hosts.map((host) => host.engine.info() as Promise<{ DockerRootDir: string }>),
    );
    expect(a!.DockerRootDir).not.toBe(b!.DockerRootDir);
  });

  it("reaches a server on host A's address from the root namespace and from host B, not one on A's loopback", async () => {
    const [a, b] = [hosts.host(0), hosts.host(1)];
    expect(a.address).not.toBe(b.address);
    expect(await probeTcp(a.address, PUBLIC_PORT)).toBe("connected");
    expect(await b.probe(a.address, PUBLIC_PORT)).toBe("connected");
    // A's loopback listener is there (seen from inside A) and nowhere else.
    expect(await a.probe("127.0.0.1", LOOPBACK_PORT)).toBe("connected");
    expect(await probeTcp(a.address, LOOPBACK_PORT)).toBe("ECONNREFUSED");
    expect(await b.probe(a.address, LOOPBACK_PORT)).toBe("ECONNREFUSED");
    expect(await b.probe("127.0.0.1", LOOPBACK_PORT)).toBe("ECONNREFUSED");
    expect(await probeTcp("127.0.0.1", LOOPBACK_PORT)).not.toBe("connected");
  });

  it("routes nothing beyond the test network: no default route in a host", async () => {
    const [a] = hosts.hosts;
    const routes = (await a!.run("ip", ["-4", "route", "show"])).stdout.trim().split("\n");
    expect(routes).toEqual([expect.stringMatching(/^10\.213\.0\.0\/24 dev eth0 /)]);
    // A routing-table lookup only: no packet is sent.
    const lookup = await a!.run("ip", ["route", "get", "203.0.113.1"], { allowFailure: true });
    expect(lookup.code).not.toBe(0);
    expect(lookup.stderr).toMatch(/unreachable/i);
  });

  it("relays a root-namespace loopback service to the hosts", async () => {
    const service = net.createServer((s) => s.end("pong\n"));
    await new Promise<void>((resolve) => service.listen(0, "127.0.0.1", resolve));
    try {
      const port = (service.address() as net.AddressInfo).port;
      const [, b] = hosts.hosts;
      expect(await b!.probe(hosts.rootAddress, port)).not.toBe("connected");
      const relay = await hosts.relayLoopback(port);
      expect(relay).toEqual({ host: "10.213.0.1", port });
      const answer = await b!.run(process.execPath, [
        "-e",
        `require("node:net").connect(${port}, ${JSON.stringify(relay.host)}).on("data", (d) => { process.stdout.write(d); process.exit(0); })`,
      ]);
      expect(answer.stdout).toBe("pong\n");
    } finally {
      service.close();
    }
  });

  it("cut() partitions host A (its engine still runs) and restore() brings it back", async () => {
    const [a, b] = [hosts.host(0), hosts.host(1)];
    await a.cut();
    expect(a.connected).toBe(false);
    expect(await probeTcp(a.address, PUBLIC_PORT, 1_500)).not.toBe("connected");
    expect(await b.probe(a.address, PUBLIC_PORT, 1_500)).not.toBe("connected");
    expect(server.running).toBe(true);
    await expect(a.engine.ping()).resolves.toBeTruthy();
    await a.restore();
    await waitFor(
      async () => (await probeTcp(a.address, PUBLIC_PORT, 500)) === "connected",
      15_000,
      "host A back",
    );
    expect(await b.probe(a.address, PUBLIC_PORT)).toBe("connected");
  });

  it("kills a process like a crash and restarts it", async () => {
    const [a] = hosts.hosts;
    const exit = await server.kill("SIGKILL");
    expect(exit.signal).toBe("SIGKILL");
    expect(await probeTcp(a!.address, PUBLIC_PORT)).toBe("ECONNREFUSED");
    server = await server.restart();
    await server.waitForOutput(/listening/, 10_000);
    expect(await probeTcp(a!.address, PUBLIC_PORT)).toBe("connected");
  });

  it("stops and restarts a host's engine; its cached images are still there", async () => {
    const [, b] = hosts.hosts;
    await b!.stopEngine();
    expect(b!.engineRunning).toBe(false);
    await expect(b!.engine.ping()).rejects.toThrow();
    await b!.startEngine();
    expect((await b!.docker(["image", "inspect", "--format", "{{.Id}}", SANDBOX_IMAGE])).trim()).toMatch(
      /^sha256:/,
    );
  });

  it("restarts an engine killed with SIGKILL: a container it ran is found stopped, not running on", async () => {
    const [, b] = hosts.hosts;
    const id = (
      await b!.docker(["run", "-d", "--network", "none", "--entrypoint", "sleep", SANDBOX_IMAGE, "600"])
    ).trim();
    await b!.stopEngine("SIGKILL");
    await b!.startEngine();
    await waitFor(
      async () => (await b!.docker(["inspect", "--format", "{{.State.Running}}", id])).trim() === "false",
      30_000,
      "the container stopped after its engine's restart",
    );
    await b!.docker(["rm", "-f", id]);
  });

  it("a second start sweeps what an unclosed run left, and finds the images cached", async () => {
    const first = hosts;
    const stray = first.hosts[1]!.spawn("sleep", ["600"]);
    // Not closed: as if its test runner had been killed.
    second = await startTestHosts(2);
    report("warm re-run", second.timings);
    expect(second.run).not.toBe(first.run);
    expect(second.timings.hosts.every((h) => h.loaded.length === 0)).toBe(true);
    await stray.exited;
    expect(stray.running).toBe(false);
    const left = await first.leftovers();
    expect([left.namespaces, left.links]).toEqual([[], []]);
    const namespaces = (await runCommand("ip", ["netns", "list"])).stdout;
    expect(namespaces).not.toContain(first.run);
    expect(namespaces).toContain(`sandpool-th-${second.run}-0`);
    // The new run works: host 0's engine answers and its address is served again.
    await expect(second.hosts[0]!.engine.ping()).resolves.toBeTruthy();
    expect(await second.hosts[1]!.probe(second.hosts[0]!.address, PUBLIC_PORT)).toBe("ECONNREFUSED");
  });

  it("close() leaves no namespace, link, dockerd, process, cgroup or mount of the run", async () => {
    const run = second!;
    expect(noLeftovers(await run.leftovers())).toBe(false);
    await run.close();
    const left = await run.leftovers();
    expect(left).toEqual({ namespaces: [], links: [], processes: [], cgroups: [], mounts: [] });
    await run.close(); // idempotent
  });
});
