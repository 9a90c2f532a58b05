/**
 * Per-session egress through a real gateway: the docker runtime, an egress pool, sandbox
 * reuse, the in-memory store. A session narrowed to one host cannot reach the workspace's
 * other allowed host; the next session on the SAME (reused) sandbox reaches what its own
 * grant allows and carries its own credentials, not the narrowed one's; widening and another
 * workspace's secret name are 403s naming the field, audited. Every contract answer is
 * checked against the contract's schemas (ContractClient).
 *
 * Network rule: the only destinations are two listeners on this host's 127.0.0.1, reached
 * through the proxy under test-only names only this test's resolver knows.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { gatewayConfigSchema } from "../../../src/config/gateway-config.js";
import { GatewayEgress } from "../../../src/egress/gateway-egress.js";
import { type RunningGateway, startGateway } from "../../../src/gateway/start-gateway.js";
import { InProcessJobRunner } from "../../../src/jobs/in-process-job-runner.js";
import { DockerRuntime } from "../../../src/runtime/docker/docker-runtime.js";
import { dockerHostsFromEnv } from "../../../src/runtime/docker/docker-runtime-options.js";
import type { OpenedSecret, SecretsReader } from "../../../src/secrets/workspace-secrets.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import type { Database } from "../../../src/store/sql/database-types.js";
import { migrateToLatest } from "../../../src/store/sql/migrate.js";
import { PgliteDialect } from "../../../src/store/sql/pglite-dialect.js";
import { egressChecks } from "../../../src/verify/probes/egress-checks.js";
import { VerifyHttp, WorkspaceClient } from "../../../src/verify/verify-client.js";
import { ContractClient } from "../../support/contract-client.js";
import { dockerSuiteAvailable, removeDeploymentContainers } from "../../support/docker-suite.js";
import { TEST_SECRET } from "../../support/gateway-harness.js";
import { waitFor } from "../../support/wait-for.js";
import { pgliteTemplate } from "../store/pglite-template.js";

const IMAGE = "sandpool/sandbox:dev";
const available = await dockerSuiteAvailable(IMAGE);

const ALPHA = "alpha.sandpool.test";
const BETA = "beta.sandpool.test";
const deployment = `sess-egress-${randomBytes(4).toString("hex")}`;
const workspace = `egress-${randomBytes(4).toString("hex")}`;

const secretOf = (name: string, host: string): OpenedSecret => ({
  name,
  binding: { hosts: [host], presentation: { header: "Authorization", template: "Bearer {{secret}}" } },
  value: `value-of-${name}`,
});

/** The secrets store as part A will serve it: this workspace holds two, another one its own. */
const secrets: SecretsReader = {
  openedSecretsOf: async (ws) =>
    ws === workspace
      ? [secretOf("alpha-key", ALPHA), secretOf("beta-key", BETA)]
      : [secretOf("theirs", ALPHA)],
};

describe.skipIf(!available)("per-session egress through a gateway", () => {
  const servers: http.Server[] = [];
  const ports: Record<string, number> = {};
  let socketDir: string;
  let gateway: RunningGateway;
  let store: MemoryCoordinationStore;
  let egress: GatewayEgress;
  let db: Kysely<Database>;
  let runtime: DockerRuntime;
  let jobs: InProcessJobRunner;
  let client: ContractClient;

  beforeAll(async () => {
    for (const name of [ALPHA, BETA]) {
      const server = http.createServer((_, res) => res.end(`hello from ${name}`));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      ports[name] = (server.address() as AddressInfo).port;
      servers.push(server);
    }
    socketDir = await mkdtemp(path.join(os.tmpdir(), "sp-"));
    const log = pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
    const config = gatewayConfigSchema.parse({
      host: "127.0.0.1",
      port: 0,
      auth: { jwtSecret: TEST_SECRET },
      policy: {
        allowedImages: [IMAGE],
        defaultImage: IMAGE,
        sandboxReuse: true,
        egressAllowed: true,
        egressAllowCidrs: ["127.0.0.1/32"],
        egressAllowHosts: [ALPHA, BETA],
      },
      // One egress sandbox: a second session can only be served by the first one's, scrubbed.
      pools: [
        { name: "plain", image: IMAGE, minIdle: 0, maxTotal: 1 },
        { name: "web", image: IMAGE, egress: true, minIdle: 0, maxTotal: 1 },
      ],
      intervals: { warmMs: 200, reapMs: 200 },
    });
    egress = new GatewayEgress(config.egress, log, async (host) =>
      host === ALPHA || host === BETA ? ["127.0.0.1"] : [],
    );
    runtime = new DockerRuntime(
      { hosts: dockerHostsFromEnv(process.env), deployment, socketDir, execTimeoutCeilingSeconds: 60 },
      log,
      egress,
    );
    db = new Kysely<Database>({
      dialect: new PgliteDialect(await PGlite.create({ loadDataDir: await pgliteTemplate() })),
    });
    await migrateToLatest(db);
    store = new MemoryCoordinationStore();
    jobs = new InProcessJobRunner(log);
    gateway = await startGateway(config, { store, db, runtime, jobs, egress, secrets }, log);
    client = new ContractClient(gateway.url, await mintToken({ secret: TEST_SECRET, workspace }));
  }, 60_000);

  afterAll(async () => {
    await gateway?.close({ destroySandboxes: true });
    await egress?.closeAll();
    await runtime?.close();
    await store?.close();
    await db?.destroy();
    await removeDeploymentContainers(deployment);
    for (const server of servers) await new Promise<void>((resolve) => server.close(() => resolve()));
    if (socketDir) await rm(socketDir, { recursive: true, force: true });
  });

  /** Fetches `host` from inside the session's sandbox, through its proxy variables. */
  async function fetchFrom(sessionId: string, host: string): Promise<string> {
    const result = await client.run(sessionId, "code_execution", {
      code: `
import urllib.request, urllib.error
try:
    print(urllib.request.urlopen("http://${host}:${ports[host]}/", timeout=10).read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except Exception as e:
    print(type(e).__name__, e)
`,
    });
    return result.stdout.trim();
  }

  async function sandboxOf(sessionId: string): Promise<string> {
    return (await store.getLease({ workspace, sessionId }))!.sandbox.sandboxId;
  }

  async function deniedCodes(): Promise<string[]> {
    await gateway.services.usage.flush();
    const rows = await db
      .selectFrom("usage_events")
      .select(["detail"])
      .where("workspace_id", "=", workspace)
      .where("kind", "=", "denied")
      .execute();
    return rows.map((row) => {
      const detail = (typeof row.detail === "string" ? JSON.parse(row.detail) : row.detail) as {
        operation: string;
        code: string;
      };
      return `${detail.operation} ${detail.code}`;
    });
  }

  it("refuses a session that widens its workspace's hosts, naming the field", async () => {
    const answer = await client.createSession({ sandpool: { egress: { hosts: [ALPHA, "pypi.org"] } } });
    expect(answer.status, answer.text).toBe(403);
    expect(answer.body).toMatchObject({
      detail: {
        code: "policy.egress_not_allowed",
        message: expect.stringContaining("sandpool.egress.hosts[1]"),
      },
    });
  });

  it("refuses another workspace's secret name, naming the field", async () => {
    const answer = await client.createSession({ sandpool: { secrets: ["alpha-key", "theirs"] } });
    expect(answer.status, answer.text).toBe(403);
    expect(answer.body).toMatchObject({
      detail: { code: "policy.secret_not_allowed", message: expect.stringContaining("sandpool.secrets[1]") },
    });
  });

  it("refuses any narrowing on a workspace whose policy withdraws egress, naming the field", async () => {
    const closed = `closed-${randomBytes(4).toString("hex")}`;
    await gateway.policyRepository.put(closed, { egressAllowed: false }, "session-egress-test");
    gateway.services.policies.invalidate(closed);
    const closedClient = new ContractClient(
      gateway.url,
      await mintToken({ secret: TEST_SECRET, workspace: closed }),
    );
    const hosts = await closedClient.createSession({ sandpool: { egress: { hosts: [ALPHA] } } });
    expect(hosts.status, hosts.text).toBe(403);
    expect(hosts.body).toMatchObject({
      detail: { code: "policy.egress_not_allowed", message: expect.stringMatching(/^sandpool\.egress: /) },
    });
    const named = await closedClient.createSession({ sandpool: { secrets: [] } });
    expect(named.status, named.text).toBe(403);
    expect((named.body as { detail: { message: string } }).detail.message).toMatch(/^sandpool\.secrets: /);
  });

  it("refuses a malformed narrowing as a bad body", async () => {
    const answer = await client.createSession({ sandpool: { egress: { hosts: ["127.0.0.1"] } } });
    expect(answer.status, answer.text).toBe(422);
    expect(answer.text).toContain("sandpool.egress.hosts[0]");
  });

  it("audits both refusals", async () => {
    await waitFor(async () => (await deniedCodes()).length >= 2, 5_000);
    expect(await deniedCodes()).toEqual(
      expect.arrayContaining([
        "sessions.create policy.egress_not_allowed",
        "sessions.create policy.secret_not_allowed",
      ]),
    );
  });

  it("keeps a narrowed session to its host, and gives the next session in the same sandbox its own grant", async () => {
    const first = await client.createSession({
      sandpool: { egress: { hosts: [ALPHA] }, secrets: ["alpha-key"] },
    });
    expect(first.status, first.text).toBe(201);
    const firstId = (first.body as { session_id: string }).session_id;
    expect(await fetchFrom(firstId, ALPHA)).toBe(`hello from ${ALPHA}`);
    // The workspace allows BETA; this session does not.
    expect(await fetchFrom(firstId, BETA)).toMatch(/^403 sandpool egress: .*beta\.sandpool\.test/);
    const sandbox = await sandboxOf(firstId);
    const narrowed = await egress.grantFor(sandbox);
    expect(narrowed?.allowHosts).toEqual([ALPHA]);
    expect(narrowed?.credentials?.map((c) => c.secret)).toEqual(["alpha-key"]);
    // The proxy's refusal is the workspace's audit row.
    await waitFor(
      async () => (await deniedCodes()).includes("egress.connect policy.egress_not_allowed"),
      5_000,
    );

    expect((await client.destroy(firstId)).status).toBe(204);
    // The sandbox is scrubbed and parked; the workspace's next session (not narrowed) takes it.
    let secondId = "";
    await waitFor(async () => {
      const second = await client.createSession({ sandpool: { secrets: ["beta-key"] } });
      if (second.status !== 201) return false;
      secondId = (second.body as { session_id: string }).session_id;
      return true;
    }, 30_000);
    expect(await sandboxOf(secondId)).toBe(sandbox);
    expect(await fetchFrom(secondId, BETA)).toBe(`hello from ${BETA}`);
    expect(await fetchFrom(secondId, ALPHA)).toBe(`hello from ${ALPHA}`);
    const own = await egress.grantFor(sandbox);
    expect(own?.allowHosts).toEqual([ALPHA, BETA]);
    expect(own?.credentials?.map((c) => c.secret)).toEqual(["beta-key"]);
    expect((await client.destroy(secondId)).status).toBe(204);
    // No lease holds the sandbox now: nothing is granted.
    await waitFor(async () => (await egress.grantFor(sandbox)) === undefined, 5_000);
    // That read left a miss, believed for 100 ms (gateway-egress.ts): past it, the sandbox's
    // next holder is looked up afresh.
    await new Promise((resolve) => setTimeout(resolve, 150));
  }, 120_000);

  it("passes sandpool verify's narrowing probe (the workspace's two hosts, each session narrowed to one)", async () => {
    const http = new VerifyHttp(`${gateway.url}/`);
    const token = await mintToken({ secret: TEST_SECRET, workspace });
    const one = new WorkspaceClient(http, token);
    try {
      const probe = egressChecks.find((check) => check.name === "egress.session-narrowing")!;
      const result = await probe.run({
        http,
        one,
        other: one,
        admin: undefined,
        tag: "t",
        session: () => Promise.reject(new Error("unused")),
        sessionOn: () => Promise.reject(new Error("unused")),
      });
      expect(result.pass, result.evidence).toBe(true);
      expect(result.evidence).toMatch(/refused by name/);
    } finally {
      await http.close();
    }
  }, 120_000);
});
