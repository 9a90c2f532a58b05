/**
 * Every refusal kind that audit-replicas.test.ts does not already cover (it has unknown
 * session, image not allowed and concurrent sessions), across two replicas as `sandpool
 * serve` assembles them (one Redis, one Postgres): tool not allowed, workspace disabled,
 * session rate, execution budget and pool capacity. The refusals are made on the two
 * replicas in turn, and each is listed within two seconds by the OTHER replica's
 * `GET /admin/v1/audit?workspace=W&kind=denied`, newest first, with its operation, code,
 * time, principal and workspace.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintToken } from "../../../src/auth/dev-keys.js";
import { adminApi } from "../../support/admin-api.js";
import { type Answer, ContractClient } from "../../support/contract-client.js";
import { deniedListed } from "../../support/denied-audit.js";
import { TEST_IMAGE, TEST_SECRET } from "../../support/gateway-harness.js";
import { redisAvailable } from "../../support/redis.js";
import {
  createRedisDeployment,
  type RedisDeployment,
  type RedisReplica,
} from "../../support/redis-gateways.js";
import { waitFor } from "../../support/wait-for.js";
import { postgresAvailable } from "../store/databases.js";

const available = (await redisAvailable()) && postgresAvailable;
const PRINCIPAL = "alice";
const isoDate = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.skipIf(!available)("audit of each refusal kind across two replicas", () => {
  let deployment: RedisDeployment;
  let a: RedisReplica;
  let b: RedisReplica;
  let adminToken: string;
  const startedAt = Date.now();

  beforeAll(async () => {
    // Three sandboxes in all, so that the capacity refusal is reachable with a few sessions.
    deployment = await createRedisDeployment({
      pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 3 }],
    });
    a = await deployment.startReplica();
    b = await deployment.startReplica();
    adminToken = await mintToken({ secret: TEST_SECRET, admin: true, subject: "ops" });
  }, 120_000);
  afterAll(() => deployment?.close(), 60_000);

  const fresh = (label: string) => `${label}-${randomBytes(3).toString("hex")}`;
  const other = (replica: RedisReplica) => (replica === a ? b : a);

  async function client(replica: RedisReplica, workspace: string): Promise<ContractClient> {
    return new ContractClient(
      replica.url,
      await mintToken({ secret: TEST_SECRET, workspace, subject: PRINCIPAL, ttlSeconds: 600 }),
    );
  }

  async function setPolicy(replica: RedisReplica, workspace: string, fields: object): Promise<void> {
    const answer = await adminApi(replica.url, adminToken)("PUT", `/workspaces/${workspace}/policy`, {
      body: fields,
    });
    expect(answer.status, answer.text).toBe(200);
  }

  function expectRefused(answer: Answer, status: number, code: string): void {
    expect(answer.status, answer.text).toBe(status);
    expect((answer.body as { detail: { code: string } }).detail.code).toBe(code);
  }

  /**
   * Waits, two seconds at most, until `replica` lists exactly `expected` ([operation, code],
   * newest first) for the workspace, and checks what each item says.
   */
  async function listedOn(
    replica: RedisReplica,
    workspace: string,
    expected: [string, string][],
  ): Promise<void> {
    const items = await deniedListed(
      replica.url,
      adminToken,
      workspace,
      expected.length,
      `${expected.length} refusals of ${workspace} on ${replica.url}`,
    );
    expect(items.map((item) => [item.operation, item.code])).toEqual(expected);
    for (const item of items) {
      expect(item).toMatchObject({ kind: "denied", workspace, principal: PRINCIPAL });
      expect(item.at).toMatch(isoDate);
      expect(Date.parse(item.at)).toBeGreaterThanOrEqual(startedAt - 1_000);
    }
    const times = items.map((item) => Date.parse(item.at));
    expect(times).toEqual([...times].sort((x, y) => y - x));
  }

  it("policy: tool not allowed on one replica, workspace disabled on the other", async () => {
    const workspace = fresh("kinds-policy");
    const created = await (await client(a, workspace)).createSession({});
    expect(created.status, created.text).toBe(201);
    const sessionId = (created.body as { session_id: string }).session_id;

    // Each edit goes through the replica that then refuses: its own cache is dropped at once.
    await setPolicy(a, workspace, { allowedTools: ["code_execution"] });
    expectRefused(
      await (await client(a, workspace)).exec(sessionId, {
        tool: "bash_code_execution",
        input: { command: "true" },
      }),
      403,
      "policy.tool_not_allowed",
    );
    await listedOn(b, workspace, [["sessions.exec", "policy.tool_not_allowed"]]);

    await setPolicy(b, workspace, { enabled: false });
    expectRefused(
      await (await client(b, workspace)).exec(sessionId, { tool: "code_execution", input: { code: "1" } }),
      403,
      "policy.workspace_disabled",
    );
    await listedOn(a, workspace, [
      ["sessions.exec", "policy.workspace_disabled"],
      ["sessions.exec", "policy.tool_not_allowed"],
    ]);
    // Re-enabled, so that its session can be ended at close like any other.
    await setPolicy(b, workspace, { enabled: true });
  });

  it("quota: the session rate on one replica, the execution budget on the other", async () => {
    const workspace = fresh("kinds-quota");
    // Set before either replica has read this workspace's policy.
    await setPolicy(a, workspace, { sessionsPerMinute: 1, execSecondsPerDay: 1 });
    const created = await (await client(a, workspace)).createSession({});
    expect(created.status, created.text).toBe(201);
    const sessionId = (created.body as { session_id: string }).session_id;

    // The rate is counted for the deployment, not per replica.
    expectRefused(await (await client(b, workspace)).createSession({}), 429, "quota.session_rate");
    await listedOn(a, workspace, [["sessions.create", "quota.session_rate"]]);

    // A call on replica b spends the one-second budget; replica a refuses the next.
    const viaA = await client(a, workspace);
    const spent = await (await client(b, workspace)).exec(sessionId, {
      tool: "code_execution",
      input: { code: "import time; time.sleep(1.2)" },
    });
    expect(spent.status, spent.text).toBe(200);
    let refused: Answer | undefined;
    // What a call spent reaches the other replica's admission when it is metered: retry the tiny call until then.
    await waitFor(
      async () => {
        const answer = await viaA.exec(sessionId, { tool: "code_execution", input: { code: "1" } });
        if (answer.status !== 200) refused = answer;
        return refused !== undefined;
      },
      5_000,
      "replica a to see the spent budget",
    );
    expectRefused(refused!, 429, "quota.exec_budget");
    await listedOn(b, workspace, [
      ["sessions.exec", "quota.exec_budget"],
      ["sessions.create", "quota.session_rate"],
    ]);
  });

  it("capacity: the pool's last sandbox leased, the next session is refused", async () => {
    const workspace = fresh("kinds-capacity");
    // Sessions on the two replicas in turn until the shared pool (three sandboxes) has none left.
    let refusedOn: RedisReplica | undefined;
    for (let i = 0; i < 4 && refusedOn === undefined; i++) {
      const replica = i % 2 === 0 ? a : b;
      const answer = await (await client(replica, workspace)).createSession({});
      if (answer.status === 201) continue;
      expectRefused(answer, 503, "capacity.exhausted");
      refusedOn = replica;
    }
    expect(refusedOn, "the pool never ran out").toBeDefined();
    await listedOn(other(refusedOn!), workspace, [["sessions.create", "capacity.exhausted"]]);
  });
});
