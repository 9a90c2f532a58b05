/**
 * The production job runner: one BullMQ queue per deployment, one worker per replica.
 * Schedules are BullMQ job schedulers, so each fires once across all replicas rather than
 * once per replica; one-off jobs (destroying a sandbox) are stored in Redis with retries
 * and exponential back-off, so a gateway that dies right after queuing one does not leak
 * the sandbox: another replica's worker runs it.
 */
import { type Job, Queue, Worker } from "bullmq";
import type { Logger } from "pino";
import {
  openRedis,
  type RedisClient,
  type RedisTarget,
} from "../store/coordination/redis/redis-connection.js";
import { JobRegistry } from "./job-registry.js";
import type { JobRunner } from "./job-runner.js";

/** Where Redis is: a standalone server's URL, or any target (Sentinel, Cluster). */
export type BullmqJobRunnerOptions = ({ redisUrl: string } | { target: RedisTarget }) & {
  /** One queue per deployment, under the prefix `{sandpool-jobs}`, see below. */
  queueName: string;
  concurrency?: number;
};

/**
 * Every key of every queue starts with this prefix; its braces are a Cluster hash tag, so a
 * queue's keys share one slot, as BullMQ's multi-key scripts need on a Redis Cluster.
 */
export const JOB_QUEUE_PREFIX = "{sandpool-jobs}";

export class BullmqJobRunner extends JobRegistry implements JobRunner {
  private readonly target: RedisTarget;
  private readonly connection: RedisClient;
  private readonly queue: Queue;
  private worker: Worker | undefined;
  private workerConnection: RedisClient | undefined;

  constructor(
    private readonly options: BullmqJobRunnerOptions,
    private readonly log: Logger,
  ) {
    super();
    this.target = "target" in options ? options.target : { kind: "standalone", url: options.redisUrl };
    // BullMQ's blocking commands need retries without a cap on this connection.
    this.connection = openRedis(this.target, "jobs");
    this.connection.on("error", (error) => log.warn({ err: error }, "job queue connection error"));
    this.queue = new Queue(options.queueName, { connection: this.connection, prefix: JOB_QUEUE_PREFIX });
  }

  async enqueue<T>(name: string, payload: T): Promise<void> {
    const job = this.job(name);
    await this.queue.add(name, payload, {
      attempts: job.options.attempts,
      backoff: { type: "exponential", delay: job.options.backoffMs },
      removeOnComplete: true,
      removeOnFail: 1_000,
    });
  }

  async start(): Promise<void> {
    for (const { name, everyMs } of this.schedules) {
      this.job(name); // fails now, at start-up, for a schedule nobody handles
      // Upserting is idempotent: every replica declares the same schedulers at start-up.
      await this.queue.upsertJobScheduler(
        name,
        { every: everyMs },
        { name, opts: { removeOnComplete: true, removeOnFail: 100 } },
      );
    }
    // The worker blocks on its connection: one of its own.
    this.workerConnection = openRedis(this.target, "jobs");
    this.workerConnection.on("error", (error) =>
      this.log.warn({ err: error }, "job worker connection error"),
    );
    this.worker = new Worker(this.options.queueName, (job) => this.process(job), {
      connection: this.workerConnection,
      prefix: JOB_QUEUE_PREFIX,
      // Jobs wait on I/O (a sandbox's scrub, a container's removal, Redis): every session's
      // end queues one, so a few slow ones must not hold up the rest.
      concurrency: this.options.concurrency ?? 16,
    });
    this.worker.on("failed", (job, error) =>
      this.log.warn({ err: error, job: job?.name, attempt: job?.attemptsMade }, "job failed"),
    );
    this.worker.on("error", (error) => this.log.warn({ err: error }, "job worker error"));
  }

  async close(): Promise<void> {
    await this.worker?.close();
    await this.queue.close();
    this.workerConnection?.disconnect();
    this.connection.disconnect();
  }

  private async process(job: Job): Promise<void> {
    await this.job(job.name).handler(job.data);
  }
}
