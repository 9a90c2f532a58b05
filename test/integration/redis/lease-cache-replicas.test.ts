/**
 * Two gateway replicas on Redis with real sandbox servers, and the lease cache between them
 * (src/store/coordination/redis/lease-cache.ts): a session ended through one replica is the
 * 404 of an unknown session through the other at once, even where that one has not heard
 * of the end yet and still holds a copy of the lease, because the end closes the session
 * inside its sandbox before it answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContractClient } from "../../support/contract-client.js";
import { redisAvailable } from "../../support/redis.js";
import {
  createRedisDeployment,
  type RedisDeployment,
  type RedisReplica,
} from "../../support/redis-gateways.js";
import { postgresAvailable } from "../store/databases.js";

const available = (await redisAvailable()) && postgresAvailable;

/** Makes a replica deaf to the `leases-ended` broadcast: it keeps its copies until they age out. */
function deafen(replica: RedisReplica): () => void {
  const leases = (replica.store as unknown as { leases: { forgetEnded(message: string): void } }).leases;
  const forget = leases.forgetEnded;
  leases.forgetEnded = () => {};
  return () => {
    leases.forgetEnded = forget;
  };
}

/** Holds back the destruction of sandboxes (the job after an end) until the returned function runs. */
function holdDestroys(replicas: RedisReplica[]): () => Promise<void> {
  const held: (() => Promise<void>)[] = [];
  const restores = replicas.map(({ gateway }) => {
    const pools = gateway.services.pools;
    const retire = pools.retire.bind(pools);
    pools.retire = (record) =>
      new Promise<void>((resolve, reject) => {
        held.push(() => retire(record).then(resolve, reject));
      });
    return () => {
      pools.retire = retire;
    };
  });
  return async () => {
    for (const restore of restores) restore();
    await Promise.all(held.splice(0).map((run) => run()));
  };
}

describe.skipIf(!available)("the lease cache across two replicas", () => {
  let deployment: RedisDeployment;
  let one: RedisReplica;
  let two: RedisReplica;

  beforeAll(async () => {
    deployment = await createRedisDeployment({
      pools: [{ name: "default", image: "sandpool/sandbox:dev", minIdle: 2, maxTotal: 6 }],
    });
    [one, two] = [await deployment.startReplica(), await deployment.startReplica()];
    await one.gateway.services.pools.warmAll();
  }, 120_000);
  afterAll(() => deployment?.close(), 60_000);

  async function sessionServedByTwo(workspace: string) {
    const [viaOne, viaTwo] = [await one.client(workspace), await two.client(workspace)];
    const id = ((await viaOne.createSession()).body as { session_id: string }).session_id;
    // Replica two's copy of the lease and its hold on the day's budget, from its first calls.
    for (let i = 0; i < 3; i++) {
      expect((await viaTwo.run(id, "code_execution", { code: `x = ${i}` })).return_code).toBe(0);
    }
    const lease = (await one.store.getLease({ workspace, sessionId: id }))!;
    return { viaOne, viaTwo, id, lease };
  }

  for (const sandboxState of ["still running", "destroyed"] as const) {
    it(`answers 404 through a replica still holding a copy once the other ended the session (sandbox ${sandboxState})`, async () => {
      const { viaOne, viaTwo, id } = await sessionServedByTwo(`team-stale-${sandboxState.length}`);
      const hear = deafen(two);
      const release = sandboxState === "still running" ? holdDestroys([one, two]) : async () => {};
      try {
        expect((await viaOne.destroy(id)).status).toBe(204);
        const exec = await viaTwo.exec(id, { tool: "code_execution", input: { code: "print(x)" } });
        expect(exec.status).toBe(404);
        expect(exec.body).toMatchObject({ detail: { code: "session.not_found" } });
        expect((await viaTwo.listFiles(id)).status).toBe(404);
      } finally {
        hear();
        await release();
      }
    }, 60_000);
  }

  it("closes the session inside its sandbox before DestroySession answers", async () => {
    const { viaOne, id, lease } = await sessionServedByTwo("team-closed");
    const sandbox = new ContractClient(lease.sandbox.endpoint);
    expect((await sandbox.getSession(lease.sandbox.innerSessionId)).status).toBe(200);
    const release = holdDestroys([one, two]);
    try {
      expect((await viaOne.destroy(id)).status).toBe(204);
      // The sandbox is still there (its destruction held back), its session is not.
      expect((await sandbox.getSession(lease.sandbox.innerSessionId)).status).toBe(404);
    } finally {
      await release();
    }
  }, 60_000);

  it("serves a live session from either replica as before", async () => {
    const { viaOne, viaTwo, id } = await sessionServedByTwo("team-live");
    expect((await viaOne.run(id, "code_execution", { code: "print(x)" })).stdout).toBe("2\n");
    expect((await viaTwo.run(id, "code_execution", { code: "print(x + 1)" })).stdout).toBe("3\n");
    expect((await viaTwo.destroy(id)).status).toBe(204);
    expect((await viaOne.getSession(id)).status).toBe(404);
    expect((await viaTwo.getSession(id)).status).toBe(404);
  }, 60_000);
});
