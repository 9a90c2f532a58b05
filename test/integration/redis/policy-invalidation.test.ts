import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POLICY_CHANNEL, PolicyAdmin } from "../../../src/policy/policy-admin.js";
import { PolicyService } from "../../../src/policy/policy-service.js";
import { deploymentPolicySchema } from "../../../src/policy-schema/deployment-policy.js";
import { RedisCoordinationStore } from "../../../src/store/coordination/redis/redis-store.js";
import { migrateToLatest } from "../../../src/store/sql/migrate.js";
import { PolicyRepository } from "../../../src/store/sql/policy-repository.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";
import { waitFor } from "../../support/sandbox-server.js";
import { type OpenedDatabase, openFreshPostgres, postgresAvailable } from "../store/databases.js";

const available = (await redisAvailable()) && postgresAvailable;
const prefix = `sandpool-test-${randomBytes(4).toString("hex")}:`;
const deployment = deploymentPolicySchema.parse({ allowedImages: ["img"], defaultImage: "img" });

describe.skipIf(!available)("policy edits across replicas", () => {
  let database: OpenedDatabase;
  const stores: RedisCoordinationStore[] = [];

  beforeAll(async () => {
    database = await openFreshPostgres();
    await migrateToLatest(database.db);
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    await database?.close();
  });

  async function replica() {
    const store = await RedisCoordinationStore.connect({ url: redisUrl, prefix });
    stores.push(store);
    const repository = new PolicyRepository(database.db);
    // A long TTL: only the broadcast can make the edit visible within the test's second.
    const policies = new PolicyService(deployment, repository, 60_000);
    await store.subscribe(POLICY_CHANNEL, (workspace) => policies.invalidate(workspace));
    return { store, policies, admin: new PolicyAdmin(deployment, ["standard"], repository, store) };
  }

  it("an edit on one replica is in force on another within a second", async () => {
    const one = await replica();
    const two = await replica();
    expect((await two.policies.forWorkspace("team-x")).maxConcurrentSessions).toBe(100);
    const started = Date.now();
    await one.admin.put("team-x", { maxConcurrentSessions: 2 }, "operator@test");
    await waitFor(async () => (await two.policies.forWorkspace("team-x")).maxConcurrentSessions === 2, 1_000);
    expect(Date.now() - started).toBeLessThan(1_000);
    const audit = await one.admin.audit("team-x");
    expect(audit[0]).toMatchObject({ actor: "operator@test" });
  });

  it("refuses an edit above the deployment ceiling with 422 and changes nothing", async () => {
    const one = await replica();
    await expect(one.admin.put("team-y", { maxConcurrentSessions: 101 }, "op")).rejects.toMatchObject({
      code: "request.malformed",
      status: 422,
    });
    expect(await one.admin.get("team-y")).toBeUndefined();
  });
});
