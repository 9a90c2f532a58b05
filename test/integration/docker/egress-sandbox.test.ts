/**
 * An egress sandbox end to end: it still has no network; its HTTP proxy variables lead to the
 * sandbox server's forwarder, through the proxy socket in its directory, to the gateway's
 * filtering proxy, which lets through only what the holder's policy grants. When the process
 * serving that socket goes (a replica stops), another runtime's reconciliation takes it over.
 *
 * Network rule: the only destination is a listener on this host's 127.0.0.1, reached through
 * the proxy under a test-only host name; nothing is resolved or contacted elsewhere.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import Dockerode from "dockerode";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayEgress } from "../../../src/egress/gateway-egress.js";
import type { EffectivePolicy } from "../../../src/policy/effective-policy.js";
import { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import { dockerHostsFromEnv } from "../../../src/runtime/docker/docker-runtime-options.js";
import type { PoolSpec, StartedSandbox } from "../../../src/runtime/sandbox-runtime.js";
import type { Lease } from "../../../src/store/coordination/records.js";
import { ContractClient } from "../../support/contract-client.js";
import { dockerSuiteAvailable, removeDeploymentContainers } from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

const IMAGE = "sandpool/sandbox:dev";
const available = await dockerSuiteAvailable(IMAGE);

const deployment = `egress-${randomBytes(4).toString("hex")}`;
const socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
const docker = new Dockerode();
const log = pino({ level: "silent" });
const pool: PoolSpec = {
  name: "web",
  egress: true,
  image: IMAGE,
  resourceClass: "standard",
  minIdle: 0,
  maxTotal: 2,
  warmupConcurrency: 1,
  coldStartTimeoutMs: 30_000,
};
/** The name sandboxes ask for; only this test's resolver knows it (as this host's loopback). */
const LISTENER_HOST = "listener.sandpool.test";
const settings = { denyCidrs: [], maxTunnelsPerSandbox: 8, connectTimeoutMs: 5_000, idleTimeoutMs: 30_000 };

describe.skipIf(!available)("an egress sandbox", () => {
  let listener: http.Server;
  let port: number;
  let sandbox: StartedSandbox;
  let client: ContractClient;
  let sessionId: string;
  /** What the workspace holding the sandbox may do; tests change it. */
  let policy: Pick<EffectivePolicy, "enabled" | "egressAllowed" | "egressAllowCidrs" | "egressAllowHosts">;
  const runtimes: DockerRuntime[] = [];
  const egresses: GatewayEgress[] = [];

  function replica() {
    const egress = new GatewayEgress(settings, log, async (host) =>
      host === LISTENER_HOST ? ["127.0.0.1"] : [],
    );
    const holder = () =>
      ({ workspace: "team-a", sessionId: "s-1", sandbox: { sandboxId: sandboxIdOf() } }) as unknown as Lease;
    egress.bind({
      leases: async () => [holder()],
      lease: async () => holder(),
      policyFor: async () => policy as EffectivePolicy,
    });
    const runtime = new DockerRuntime(
      { hosts: dockerHostsFromEnv(process.env), deployment, socketDir, execTimeoutCeilingSeconds: 60 },
      log,
      egress,
    );
    runtimes.push(runtime);
    egresses.push(egress);
    return runtime;
  }
  let startedId = "";
  const sandboxIdOf = () => startedId;

  /** Fetches the listener from inside the sandbox, through its proxy variables. */
  async function fetchFromSandbox(): Promise<string> {
    const result = (await client.run(sessionId, "code_execution", {
      code: `
import urllib.request, urllib.error
try:
    print(urllib.request.urlopen("http://${LISTENER_HOST}:${port}/", timeout=10).read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except Exception as e:
    print(type(e).__name__, e)
`,
    })) as { stdout: string };
    return result.stdout.trim();
  }

  beforeAll(async () => {
    listener = http.createServer((_, res) => res.end("hello from the host"));
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    port = (listener.address() as AddressInfo).port;
    policy = { enabled: true, egressAllowed: true, egressAllowCidrs: ["127.0.0.1/32"], egressAllowHosts: [] };
    startedId = `egr${randomBytes(10).toString("hex")}`.slice(0, 24);
    sandbox = await replica().start({ sandboxId: startedId, pool, deadline: Date.now() + 30_000 });
    client = new ContractClient(sandbox.endpoint);
    sessionId = await newSession(client);
  });

  afterAll(async () => {
    await removeDeploymentContainers(deployment);
    for (const egress of egresses) await egress.closeAll();
    for (const runtime of runtimes) await runtime.close();
    await new Promise<void>((resolve) => listener.close(() => resolve()));
    await rm(socketDir, { recursive: true, force: true });
  });

  it("has no network of its own: the proxy is its only way out", async () => {
    const info = await docker.getContainer(sandbox.runtimeId.split(":")[1]!).inspect();
    expect(info.HostConfig.NetworkMode).toBe("none");
    expect(info.Config.Env).toEqual(expect.arrayContaining(["HTTP_PROXY=http://127.0.0.1:3128"]));
  });

  it("reaches what the policy grants, through the gateway's proxy", async () => {
    expect(await fetchFromSandbox()).toBe("hello from the host");
  });

  it("is refused what the policy does not grant, and everything once egress is withdrawn", async () => {
    policy = { ...policy, egressAllowCidrs: [] };
    expect(await fetchFromSandbox()).toMatch(/^403 sandpool egress: .*127\.0\.0\.1.*loopback/i);
    policy = { ...policy, egressAllowCidrs: ["127.0.0.1/32"], egressAllowHosts: ["pypi.org"] };
    expect(await fetchFromSandbox()).toMatch(/^403 sandpool egress: /);
    policy = { ...policy, egressAllowHosts: [], egressAllowed: false };
    expect(await fetchFromSandbox()).toMatch(/^403 sandpool egress: /);
    policy = { ...policy, egressAllowed: true };
    expect(await fetchFromSandbox()).toBe("hello from the host");
  });

  it("is refused this host's own addresses and private ranges by default", async () => {
    // A name that resolves to docker0's address (this host's, where a 0.0.0.0 listener answers).
    const docker0 = new GatewayEgress(settings, log, async () => ["172.17.0.1"]);
    docker0.bind({
      leases: async () => [
        { workspace: "team-a", sessionId: "s-x", sandbox: { sandboxId: "x" } } as unknown as Lease,
      ],
      lease: async () =>
        ({ workspace: "team-a", sessionId: "s-x", sandbox: { sandboxId: "x" } }) as unknown as Lease,
      policyFor: async () => ({ ...policy, egressAllowCidrs: [] }) as unknown as EffectivePolicy,
    });
    egresses.push(docker0);
    const grant = await docker0.grantFor("x");
    expect(grant).toEqual({ allowCidrs: [], allowHosts: [] });
    const proxySocket = path.join(socketDir, "probe-egress.sock");
    await docker0.open("x", proxySocket);
    const answer = await new Promise<string>((resolve, reject) => {
      const request = http.request({ socketPath: proxySocket, path: "http://listener.test/" }, (res) => {
        let text = "";
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => resolve(`${res.statusCode} ${text.trim()}`));
      });
      request.once("error", reject);
      request.end();
    });
    expect(answer).toMatch(/^403 sandpool egress: .*172\.17\.0\.1/);
  });

  it("keeps its egress when the replica serving it goes: another takes the socket over", async () => {
    await egresses[0]!.closeAll();
    expect(await fetchFromSandbox()).not.toBe("hello from the host");
    const other = replica();
    const otherEgress = egresses.at(-1)!;
    const reconcileLook = async () => other.tidy(await other.list());
    await other.list();
    expect(otherEgress.serves(startedId)).toBe(false); // a listing alone changes nothing
    await reconcileLook();
    expect(otherEgress.serves(startedId)).toBe(true);
    expect(await fetchFromSandbox()).toBe("hello from the host");
    // A second look changes nothing: the socket answers.
    await reconcileLook();
    expect(otherEgress.serves(startedId)).toBe(true);
    // Destroyed by someone else (another replica): the next look closes the proxy it served.
    await runtimes[0]!.destroy(sandbox.runtimeId);
    await reconcileLook();
    expect(otherEgress.serves(startedId)).toBe(false);
  });
});
