/**
 * The production job runner: one BullMQ queue per deployment, one worker per replica.
 * Schedules are BullMQ job schedulers, so each fires once across all replicas rather than
 * once per replica; one-off jobs (destroying a sandbox) are stored in Redis with retries
 * and exponential back-off, so a gateway that dies right after queuing one does not leak
 * the sandbox: another replica's worker runs it.
 */
import { type Job, Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import type { Logger } from "pino";
import { JobRegistry } from "./job-registry.js";
import type { JobRunner } from "./job-runner.js";

export interface BullmqJobRunnerOptions {
  redisUrl: string;
  /** One queue per deployment; braces keep its keys in one Redis Cluster slot. */
  queueName: string;
  concurrency?: number;
}

export class BullmqJobRunner extends JobRegistry implements JobRunner {
  private readonly connection: Redis;
  private readonly queue: Queue;
  private worker: Worker | undefined;

  constructor(
    private readonly options: BullmqJobRunnerOptions,
    private readonly log: Logger,
  ) {
    super();
    // BullMQ's blocking commands need retries without a cap on this connection.
    this.connection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
    this.connection.on("error", (error) => log.warn({ err: error }, "job queue connection error"));
    this.queue = new Queue(options.queueName, { connection: this.connection, prefix: "{sandpool-jobs}" });
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
    this.worker = new Worker(this.options.queueName, (job) => this.process(job), {
      connection: this.connection.duplicate(),
      prefix: "{sandpool-jobs}",
      concurrency: this.options.concurrency ?? 4,
    });
    this.worker.on("failed", (job, error) =>
      this.log.warn({ err: error, job: job?.name, attempt: job?.attemptsMade }, "job failed"),
    );
    this.worker.on("error", (error) => this.log.warn({ err: error }, "job worker error"));
  }

  async close(): Promise<void> {
    await this.worker?.close();
    await this.queue.close();
    this.connection.disconnect();
  }

  private async process(job: Job): Promise<void> {
    await this.job(job.name).handler(job.data);
  }
}
