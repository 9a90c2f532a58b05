/**
 * Workspace secrets end to end through `sandpool serve` (the built CLI): an operator stores a
 * secret with the admin API, code in an egress sandbox calls the bound host over HTTPS with
 * no flags, and the upstream receives the credential the code never held. The serve wiring
 * is what is under test: the key ring from the environment, the egress CA made once and kept
 * in Postgres, upstream trust from egress.upstreamCaFiles, grants per session. Then the
 * hostile view: the code's environment, files and /proc hold no value (and `sandpool verify`'s
 * own probes say so), a session that names no secret sends none, a removed secret stops.
 *
 * Network rule: the upstream is a TLS server this test starts on 127.0.0.1, reached under the
 * name `localhost`; the workspace may reach nothing else.
 */
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import type { IncomingHttpHeaders } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { generateDeploymentCa } from "../../../src/egress/tls/deployment-ca.js";
import { LeafCertificates } from "../../../src/egress/tls/leaf-certificates.js";
import { runVerify } from "../../../src/verify/run-verify.js";
import type { CliServer } from "../../support/cli.js";
import type { ContractClient } from "../../support/contract-client.js";
import {
  createServeDeployment,
  SERVE_AUDIENCE,
  SERVE_SECRET,
  type ServeDeployment,
  serveStackAvailable,
} from "../../support/serve-deployment.js";

const available = await serveStackAvailable();
const VALUE = `sk-${randomBytes(18).toString("hex")}`;
const KEY_RING = `k1:${randomBytes(32).toString("base64")}`;

describe.skipIf(!available)("workspace secrets through sandpool serve", () => {
  const workspace = `secrets-${randomBytes(4).toString("hex")}`;
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  let upstream: Server;
  let port: number;
  let deployment: ServeDeployment;
  let replica: CliServer;
  let client: ContractClient;
  let admin: string;
  let upstreamCaPem: string;

  const adminCall = (method: string, route: string, body?: unknown) =>
    fetch(`${replica.url}/admin/v1${route}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  async function newSession(body?: unknown): Promise<string> {
    const created = await client.createSession(body);
    expect(created.status).toBe(201);
    return (created.body as { session_id: string }).session_id;
  }

  /** Python in the session calls the upstream with urllib (OpenSSL's default trust): status and body. */
  async function callUpstream(sessionId: string, pathname: string): Promise<string> {
    const output = await client.run(sessionId, "code_execution", {
      // The sandbox's NO_PROXY names localhost (its own loopback): here localhost is the host's,
      // reached through the proxy like any name.
      // The default trust (the deployment CA, for a terminated connection) plus the upstream's
      // own CA, which a tunnel without a credential shows the code as it is.
      code: [
        "import os, ssl, urllib.request",
        "for name in ('NO_PROXY', 'no_proxy'): os.environ.pop(name, None)",
        "trust = ssl.create_default_context()",
        `trust.load_verify_locations(cadata=${JSON.stringify(upstreamCaPem)})`,
        `print(urllib.request.urlopen('https://localhost:${port}${pathname}', timeout=20, context=trust).read().decode())`,
      ].join("\n"),
    });
    return `${output.stdout}${output.stderr}`;
  }

  beforeAll(async () => {
    const upstreamCa = await generateDeploymentCa("upstream");
    upstreamCaPem = upstreamCa.certPem;
    const leaves = new LeafCertificates(upstreamCa);
    upstream = createServer(
      {
        SNICallback: (name, done) =>
          leaves.contextFor(name).then(
            (context) => done(null, context),
            (error: Error) => done(error),
          ),
      },
      (req, res) => {
        seen.push({ url: req.url ?? "", headers: req.headers });
        res.end(`hello ${req.url}`);
      },
    );
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    port = (upstream.address() as AddressInfo).port;
    const caFile = path.join(tmpdir(), `sandpool-upstream-ca-${randomBytes(4).toString("hex")}.pem`);
    await writeFile(caFile, upstreamCa.certPem);

    deployment = await createServeDeployment(`
pools:
  - name: plain
    image: sandpool/sandbox:dev
    minIdle: 0
    maxTotal: 2
  - name: web
    image: sandpool/sandbox:dev
    egress: true
    minIdle: 1
    maxTotal: 4
    coldStartTimeoutMs: 60000
policy:
  egressAllowed: true
  egressAllowCidrs: ["127.0.0.1/32"]
  # A second name (never resolved: the verify probes are refused by name) lets a session narrow.
  egressAllowHosts: [localhost, "*.sandpool-verify.test"]
egress:
  upstreamCaFiles: [${JSON.stringify(caFile)}]
runtime:
  docker:
    preloadModules: []
intervals:
  warmMs: 500
  reapMs: 500
`);
    deployment.env.SANDPOOL_SECRETS_KEYS = KEY_RING;
    replica = await deployment.startReplica();
    admin = await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, admin: true });
    client = await deployment.client(replica, workspace);
  }, 180_000);

  afterAll(async () => {
    await deployment?.close();
    upstream?.close();
  }, 120_000);

  it("sends the stored secret to the bound host, from code that never holds it", async () => {
    const stored = await adminCall("PUT", `/workspaces/${workspace}/secrets/api`, {
      value: VALUE,
      hosts: ["localhost"],
      header: "Authorization",
      template: "Bearer {{secret}}",
    });
    expect(stored.status).toBe(201);
    expect(await stored.text()).not.toContain(VALUE);

    const sessionId = await newSession();
    const answer = await callUpstream(sessionId, "/with-secret");
    expect(answer).toContain("hello /with-secret");
    expect(seen.at(-1)).toMatchObject({
      url: "/with-secret",
      headers: { authorization: `Bearer ${VALUE}` },
    });

    // What the code can read holds no trace of it.
    const dump = await client.run(sessionId, "bash_code_execution", {
      command:
        "env; cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\\0' '\\n'; cat /run/sandpool/* 2>/dev/null",
    });
    expect(`${dump.stdout}${dump.stderr}`).not.toContain(VALUE);
    await client.destroy(sessionId);
  }, 120_000);

  it("sends nothing to a session that names no secret, and nothing once the secret is removed", async () => {
    const narrowedId = await newSession({ sandpool: { secrets: [] } });
    expect(await callUpstream(narrowedId, "/no-secrets")).toContain("hello /no-secrets");
    expect(seen.at(-1)?.url).toBe("/no-secrets");
    expect(seen.at(-1)?.headers.authorization).toBeUndefined();
    await client.destroy(narrowedId);

    expect((await adminCall("DELETE", `/workspaces/${workspace}/secrets/api`)).status).toBe(204);
    const later = await newSession();
    expect(await callUpstream(later, "/removed")).toContain("hello /removed");
    expect(seen.at(-1)?.headers.authorization).toBeUndefined();
    await client.destroy(later);
  }, 120_000);

  it("passes sandpool verify's secret and narrowing probes", async () => {
    const other = `secrets-other-${randomBytes(4).toString("hex")}`;
    const results = await runVerify({
      url: replica.url,
      token: await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, workspace }),
      otherToken: await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, workspace: other }),
      adminToken: admin,
      only: ["egress.secret-unseen", "egress.session-narrowing"],
    });
    expect(results.map((result) => result.name).sort()).toEqual([
      "egress.secret-unseen",
      "egress.session-narrowing",
    ]);
    for (const result of results) {
      expect(result.outcome, result.evidence).toBe("pass");
      expect(result.evidence).not.toMatch(/not applicable/);
    }
  }, 300_000);
});
