/** The dev job runner: handlers on timers in this process, with the same retry rules. */
import type { Logger } from "pino";
import { JobRegistry, type RegisteredJob } from "./job-registry.js";
import type { JobRunner } from "./job-runner.js";

export class InProcessJobRunner extends JobRegistry implements JobRunner {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private readonly sleepers = new Set<() => void>();
  private closed = false;

  constructor(private readonly log: Logger) {
    super();
  }

  async enqueue<T>(name: string, payload: T): Promise<void> {
    const job = this.job(name);
    this.track(this.attempt(name, job, payload, 1));
  }

  async start(): Promise<void> {
    for (const { name, everyMs } of this.schedules) {
      const job = this.job(name);
      let busy = false;
      const timer = setInterval(() => {
        if (busy || this.closed) return; // a slow run is not overlapped by the next tick
        busy = true;
        this.track(
          job
            .handler(undefined)
            .catch((error) => this.log.error({ err: error, job: name }, "scheduled job failed"))
            .finally(() => {
              busy = false;
            }),
        );
      }, everyMs);
      timer.unref();
      this.timers.add(timer);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.sleepers) wake(); // back-offs end now: close() runs the retries
    for (const timer of this.timers) clearInterval(timer);
    this.timers.clear();
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async attempt(name: string, job: RegisteredJob, payload: unknown, attempt: number): Promise<void> {
    try {
      await job.handler(payload);
    } catch (error) {
      if (attempt >= job.options.attempts) {
        this.log.error({ err: error, job: name, attempt }, "job failed for good");
        return;
      }
      this.log.warn({ err: error, job: name, attempt }, "job failed; retrying");
      // While closing, retries run at once so close() still completes the work.
      if (!this.closed) await this.sleep(job.options.backoffMs * 2 ** (attempt - 1));
      await this.attempt(name, job, payload, attempt + 1);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      timer.unref();
      this.sleepers.add(wake);
    });
  }

  private track(promise: Promise<void>): void {
    this.running.add(promise);
    void promise.finally(() => this.running.delete(promise));
  }
}
