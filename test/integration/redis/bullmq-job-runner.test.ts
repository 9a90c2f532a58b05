/**
 * The BullMQ job runner against the shared standalone Redis and against a Redis Cluster this
 * file starts: every queue's keys are under the hash-tagged prefix, so BullMQ's multi-key
 * scripts run on one Cluster slot.
 */
import { randomBytes } from "node:crypto";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { BullmqJobRunner, JOB_QUEUE_PREFIX } from "../../../src/jobs/bullmq-job-runner.js";
import {
  openRedis,
  type RedisTarget,
  scanKeys,
} from "../../../src/store/coordination/redis/redis-connection.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";
import {
  type RedisClusterHandle,
  redisClusterToolsAvailable,
  startRedisCluster,
} from "../../support/redis-cluster.js";
import { waitFor } from "../../support/wait-for.js";

const log = pino({ level: "silent" });
const standaloneAvailable = await redisAvailable();
const clusterAvailable = await redisClusterToolsAvailable();

describe.skipIf(!standaloneAvailable)("BullMQ job runner on one Redis server", () => {
  describeJobRunner(() => ({ kind: "standalone", url: redisUrl }));
});

describe.skipIf(!clusterAvailable)("BullMQ job runner on a Redis Cluster", () => {
  let cluster: RedisClusterHandle;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  describeJobRunner(() => cluster.target);

  it("keeps every key of the queue in the hash-tagged slot", async () => {
    const queueName = `test-${randomBytes(5).toString("hex")}`;
    const created = new BullmqJobRunner({ target: cluster.target, queueName }, log);
    created.register("noop", async () => undefined);
    await created.enqueue("noop", {});
    await created.close();
    const admin = cluster.admin();
    try {
      await waitFor(() => admin.status === "ready", 10_000, "the admin client");
      const keys = await scanKeys(admin, `*${queueName}*`);
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) expect(key.startsWith(`${JOB_QUEUE_PREFIX}:${queueName}:`)).toBe(true);
    } finally {
      admin.disconnect();
    }
  });
});

function describeJobRunner(target: () => RedisTarget): void {
  const runners: BullmqJobRunner[] = [];
  const queues: string[] = [];

  function runner(queueName: string): BullmqJobRunner {
    const created = new BullmqJobRunner({ target: target(), queueName }, log);
    runners.push(created);
    return created;
  }

  function freshQueue(): string {
    const name = `test-${randomBytes(5).toString("hex")}`;
    queues.push(name);
    return name;
  }

  afterEach(async () => {
    for (const created of runners.splice(0)) await created.close();
    const admin = openRedis(target(), "jobs");
    admin.on("error", () => {});
    await waitFor(() => admin.status === "ready", 10_000, "the cleanup client");
    for (const queue of queues.splice(0)) {
      // One slot (the prefix's tag), so one DEL may take them all, on a Cluster too.
      const keys = await scanKeys(admin, `${JOB_QUEUE_PREFIX}:${queue}:*`);
      if (keys.length > 0) await admin.del(...keys);
    }
    admin.disconnect();
  });

  it("fires a schedule once across replicas, not once per replica", async () => {
    const queue = freshQueue();
    const runs: number[] = [];
    for (let replica = 0; replica < 2; replica++) {
      const created = runner(queue);
      created.register("tick", async () => {
        runs.push(replica);
      });
      created.schedule("tick", 250);
      await created.start();
    }
    await new Promise((resolve) => setTimeout(resolve, 2_600));
    // About ten ticks in 2.6 s: one per interval, whichever replica takes it.
    expect(runs.length).toBeGreaterThanOrEqual(6);
    expect(runs.length).toBeLessThanOrEqual(12);
  });

  it("retries a failing job with back-off until it succeeds", async () => {
    const created = runner(freshQueue());
    const attempts: number[] = [];
    created.register(
      "flaky",
      async (payload: { id: string }) => {
        attempts.push(Date.now());
        if (attempts.length < 3) throw new Error(`not yet (${payload.id})`);
      },
      { attempts: 5, backoffMs: 100 },
    );
    await created.start();
    await created.enqueue("flaky", { id: "x" });
    await waitFor(() => attempts.length === 3, 10_000, "three attempts");
    expect(attempts[2]! - attempts[1]!).toBeGreaterThanOrEqual(attempts[1]! - attempts[0]!);
  });

  it("keeps a job queued by a replica that stops, for another to run", async () => {
    const queue = freshQueue();
    const leaving = runner(queue);
    leaving.register("destroy", async () => undefined);
    // Not started: it only queues, as a gateway that dies right after a release would.
    await leaving.enqueue("destroy", { sandboxId: "sbx-1" });
    await leaving.close();
    const seen: unknown[] = [];
    const staying = runner(queue);
    staying.register("destroy", async (payload) => {
      seen.push(payload);
    });
    await staying.start();
    await waitFor(() => seen.length === 1, 10_000, "the job to run on the other replica");
    expect(seen).toEqual([{ sandboxId: "sbx-1" }]);
  });
}
