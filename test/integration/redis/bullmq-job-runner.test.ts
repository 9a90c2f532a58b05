import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { BullmqJobRunner } from "../../../src/jobs/bullmq-job-runner.js";
import { redisAvailable, redisUrl } from "../../support/redis.js";
import { waitFor } from "../../support/wait-for.js";

const available = await redisAvailable();
const log = pino({ level: "silent" });
const runners: BullmqJobRunner[] = [];
const queues: string[] = [];

function runner(queueName: string): BullmqJobRunner {
  const created = new BullmqJobRunner({ redisUrl, queueName }, log);
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
  const admin = new Redis(redisUrl);
  for (const queue of queues.splice(0)) {
    const keys = await admin.keys(`{sandpool-jobs}:${queue}:*`);
    if (keys.length > 0) await admin.del(...keys);
  }
  admin.disconnect();
});

describe.skipIf(!available)("BullMQ job runner", () => {
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
});
