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
import { defaultJobOptions, type JobHandler, type JobOptions, type JobRunner } from "./job-runner.js";

export interface BullmqJobRunnerOptions {
  redisUrl: string;
  /** One queue per deployment; braces keep its keys in one Redis Cluster slot. */
  queueName: string;
  concurrency?: number;
}

interface Registered {
  handler: JobHandler<unknown>;
  options: JobOptions;
}

export class BullmqJobRunner implements JobRunner {
  private readonly handlers = new Map<string, Registered>();
  private readonly schedules: { name: string; everyMs: number }[] = [];
  private readonly connection: Redis;
  private readonly queue: Queue;
  private worker: Worker | undefined;

  constructor(
    private readonly options: BullmqJobRunnerOptions,
    private readonly log: Logger,
  ) {
    // BullMQ's blocking commands need retries without a cap on this connection.
    this.connection = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
    this.connection.on("error", (error) => log.warn({ err: error }, "job queue connection error"));
    this.queue = new Queue(options.queueName, { connection: this.connection, prefix: "{sandpool-jobs}" });
  }

  register<T>(name: string, handler: JobHandler<T>, options: Partial<JobOptions> = {}): void {
    this.handlers.set(name, {
      handler: handler as JobHandler<unknown>,
      options: { ...defaultJobOptions, ...options },
    });
  }

  schedule(name: string, everyMs: number): void {
    this.schedules.push({ name, everyMs });
  }

  async enqueue<T>(name: string, payload: T): Promise<void> {
    const job = this.handlers.get(name);
    if (!job) throw new Error(`no handler registered for job '${name}'`);
    await this.queue.add(name, payload, {
      attempts: job.options.attempts,
      backoff: { type: "exponential", delay: job.options.backoffMs },
      removeOnComplete: true,
      removeOnFail: 1_000,
    });
  }

  async start(): Promise<void> {
    for (const { name, everyMs } of this.schedules) {
      if (!this.handlers.has(name)) throw new Error(`no handler registered for scheduled job '${name}'`);
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
    const registered = this.handlers.get(job.name);
    if (!registered) throw new Error(`no handler registered for job '${job.name}'`);
    await registered.handler(job.data);
  }
}
