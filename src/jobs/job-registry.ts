/**
 * What every job runner keeps the same way: the handler registered for each job name,
 * with its retry options, and the schedules declared before start().
 */
import { defaultJobOptions, type JobHandler, type JobOptions } from "./job-runner.js";

export interface RegisteredJob {
  handler: JobHandler<unknown>;
  options: JobOptions;
}

export abstract class JobRegistry {
  private readonly handlers = new Map<string, RegisteredJob>();
  protected readonly schedules: { name: string; everyMs: number }[] = [];

  register<T>(name: string, handler: JobHandler<T>, options: Partial<JobOptions> = {}): void {
    this.handlers.set(name, {
      handler: handler as JobHandler<unknown>,
      options: { ...defaultJobOptions, ...options },
    });
  }

  schedule(name: string, everyMs: number): void {
    this.schedules.push({ name, everyMs });
  }

  /** The job registered as `name`; a name nobody registered is a programming error. */
  protected job(name: string): RegisteredJob {
    const job = this.handlers.get(name);
    if (!job) throw new Error(`no handler registered for job '${name}'`);
    return job;
  }
}
