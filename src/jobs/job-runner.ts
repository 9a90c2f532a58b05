/**
 * Background work behind one interface: one-off jobs with retries (destroying a sandbox
 * must survive a transient failure) and schedules (warm-up, reaping, reconciliation,
 * usage flushing). Production runs them on BullMQ so a schedule fires once across all
 * replicas; dev runs the same handlers on in-process timers.
 */
export interface JobOptions {
  attempts: number;
  /** First retry delay; each further retry doubles it. */
  backoffMs: number;
}

export type JobHandler<T> = (payload: T) => Promise<void>;

export interface JobRunner {
  /** Declares what a job name does. Call before start(). */
  register<T>(name: string, handler: JobHandler<T>, options?: Partial<JobOptions>): void;
  /** Runs `name` every `everyMs` (never two runs of it at once). Call before start(). */
  schedule(name: string, everyMs: number): void;
  enqueue<T>(name: string, payload: T): Promise<void>;
  start(): Promise<void>;
  /** Stops schedules and waits for running jobs (pending retries of one-off jobs run now). */
  close(): Promise<void>;
}

export const defaultJobOptions: JobOptions = { attempts: 5, backoffMs: 500 };
