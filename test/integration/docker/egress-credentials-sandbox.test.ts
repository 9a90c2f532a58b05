/**
 * Credentials the code never sees, end to end: a real egress sandbox whose Python code calls
 * a bound HTTPS host through its proxy variables (urllib, requests, curl: no flag, no
 * certificate option); the gateway's proxy terminates TLS with the deployment CA the
 * sandbox trusts, adds the credential, and verifies the upstream's own certificate. The
 * upstream sees the credential; the code's environment, its writable files and /proc hold
 * no trace of it.
 *
 * Network rule: the upstream is an HTTPS listener on this host's 127.0.0.1 with a CA of this
 * test's own, reached under a test-only name that only this test's resolver knows.
 * The grant is composed as the gateway composes it (GatewayEgress over a lease, its policy and the workspace's secrets).
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import type { IncomingHttpHeaders, Server } from "node:http";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressGrant } from "../../../src/egress/egress-rules.js";
import { GatewayEgress } from "../../../src/egress/gateway-egress.js";
import { generateDeploymentCa } from "../../../src/egress/tls/deployment-ca.js";
import { LeafCertificates } from "../../../src/egress/tls/leaf-certificates.js";
import type { EffectivePolicy } from "../../../src/policy/effective-policy.js";
import { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import { dockerHostsFromEnv } from "../../../src/runtime/docker/docker-runtime-options.js";
import type { PoolSpec, StartedSandbox } from "../../../src/runtime/sandbox-runtime.js";
import type { Lease } from "../../../src/store/coordination/records.js";
import { ContractClient } from "../../support/contract-client.js";
import { dockerSuiteAvailable, removeDeploymentContainers } from "../../support/docker-suite.js";
import { newSession } from "../../support/sandbox-server.js";

/** The data-science image: curl and requests besides Python's urllib. */
const IMAGE = process.env.SANDPOOL_TEST_DS_IMAGE ?? "sandpool/sandbox-datascience:dev";
const available = await dockerSuiteAvailable(IMAGE);

const deployment = `cred-${randomBytes(4).toString("hex")}`;
const socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
const log = pino({ level: "silent" });
const HOST = "api.bound.test";
/** Built from parts in the sandbox's code, so the code's own text never holds it whole. */
const VALUE_PARTS = ["sk-live-", "c0de-never-", randomBytes(6).toString("hex")];
const VALUE = VALUE_PARTS.join("");
const pool: PoolSpec = {
  name: "web",
  egress: true,
  image: IMAGE,
  resourceClass: "standard",
  minIdle: 0,
  maxTotal: 1,
  warmupConcurrency: 1,
  coldStartTimeoutMs: 30_000,
};
const settings = { denyCidrs: [], maxTunnelsPerSandbox: 8, connectTimeoutMs: 5_000, idleTimeoutMs: 30_000 };

describe.skipIf(!available)("credentials in a real egress sandbox", () => {
  let upstream: Server;
  let port: number;
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  let sandbox: StartedSandbox;
  let client: ContractClient;
  let sessionId: string;
  let runtime: DockerRuntime;
  let egress: GatewayEgress;
  const used: string[] = [];

  beforeAll(async () => {
    const upstreamCa = await generateDeploymentCa("upstream");
    const upstreamLeaves = new LeafCertificates(upstreamCa);
    upstream = createServer(
      {
        SNICallback: (name, done) =>
          upstreamLeaves.contextFor(name).then(
            (context) => done(null, context),
            (error) => done(error),
          ),
      },
      (req, res) => {
        seen.push({ url: req.url ?? "", headers: req.headers });
        res.end(`hello ${req.url}`);
      },
    );
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    port = (upstream.address() as AddressInfo).port;

    const deploymentCa = await generateDeploymentCa(deployment);
    egress = new GatewayEgress(settings, log, async (host) => (host === HOST ? ["127.0.0.1"] : []), {
      injection: { leaves: new LeafCertificates(deploymentCa), upstreamCa: [upstreamCa.certPem] },
    });
    const sandboxId = `crd${randomBytes(10).toString("hex")}`.slice(0, 24);
    const policy = {
      enabled: true,
      egressAllowed: true,
      egressAllowCidrs: ["127.0.0.1/32"],
      egressAllowHosts: [],
    };
    const lease = { workspace: "team-a", sessionId: "s-1", sandbox: { sandboxId } } as unknown as Lease;
    egress.bind(
      {
        leases: async () => [lease],
        lease: async () => lease,
        policyFor: async () => policy as unknown as EffectivePolicy,
        secretsOf: async () => [
          {
            name: "api",
            binding: {
              hosts: [HOST],
              presentation: { header: "Authorization", template: "Bearer {{secret}}" },
            },
            value: VALUE,
          },
        ],
      },
      { credentialUsed: (_holder, secret) => used.push(secret) },
    );
    runtime = new DockerRuntime(
      { hosts: dockerHostsFromEnv(process.env), deployment, socketDir, execTimeoutCeilingSeconds: 60 },
      log,
      egress,
    );
    sandbox = await runtime.start({ sandboxId, pool, deadline: Date.now() + 60_000 });
    client = new ContractClient(sandbox.endpoint);
    sessionId = await newSession(client);
  }, 120_000);

  afterAll(async () => {
    await removeDeploymentContainers(deployment);
    await egress?.closeAll();
    await runtime?.close();
    upstream?.closeAllConnections();
    await new Promise<void>((resolve) => upstream?.close(() => resolve()) ?? resolve());
    await rm(socketDir, { recursive: true, force: true });
  });

  async function python(code: string): Promise<string> {
    const result = (await client.run(sessionId, "code_execution", { code })) as {
      stdout: string;
      stderr: string;
    };
    return `${result.stdout}${result.stderr}`.trim();
  }

  it("reaches the bound host with urllib, requests and curl, trusting the CA with no flag", async () => {
    const url = `https://${HOST}:${port}`;
    const out = await python(`
import subprocess, urllib.request
print("urllib", urllib.request.urlopen("${url}/urllib", timeout=15).read().decode())
try:
    import requests
    print("requests", requests.get("${url}/requests", timeout=15).text)
except ImportError:
    print("requests not installed")
curl = subprocess.run(["curl", "-sS", "--max-time", "15", "${url}/curl"], capture_output=True, text=True)
print("curl", curl.stdout.strip(), curl.stderr.strip())
`);
    expect(out).toContain("urllib hello /urllib");
    expect(out).toContain("requests hello /requests");
    expect(out).toContain("curl hello /curl");
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (const request of seen) expect(request.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(used.length).toBe(seen.length);
  });

  it("leaves no trace of the value in the code's environment, files or /proc", async () => {
    const out = await python(`
import os
needle = ${JSON.stringify(VALUE_PARTS)}
needle = "".join(needle).encode()
hits = []
if needle in "\\0".join(f"{k}={v}" for k, v in os.environ.items()).encode():
    hits.append("environ")
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for name in ("environ", "cmdline"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                if needle in f.read():
                    hits.append(f"/proc/{pid}/{name}")
        except OSError:
            pass
for root in ("/run/sandpool", "/tmp", "/home", "/etc", os.getcwd(), os.path.expanduser("~")):
    for base, _, files in os.walk(root):
        for name in files:
            full = os.path.join(base, name)
            try:
                if os.path.getsize(full) < 20_000_000:
                    with open(full, "rb") as f:
                        if needle in f.read():
                            hits.append(full)
            except OSError:
                pass
print("hits", hits)
print("ssl", os.environ.get("SSL_CERT_FILE"), os.environ.get("NODE_EXTRA_CA_CERTS"))
try:
    open("/run/sandpool/ca-bundle.pem", "a").write("x")
    print("bundle writable")
except OSError as e:
    print("bundle read-only", type(e).__name__)
`);
    expect(out).toContain("hits []");
    expect(out).toContain("ssl /run/sandpool/ca-bundle.pem /run/sandpool/ca.pem");
    expect(out).toContain("bundle read-only");
  });
});
