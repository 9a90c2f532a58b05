/**
 * Bursts of leases and the engine. An engine starts only so many containers a second however
 * many are asked at once (src/pool/start-rate.ts): a hundred cold starts asked together each
 * take as long as the whole hundred, and here every one of them missed its 30 s deadline (a
 * burst of 100 on a fresh workspace answered 100 times 503). So a lease that finds nothing
 * ready starts a sandbox itself only while the engine absorbs another start; beyond that it
 * waits for the next start of its pool on this replica to end (or a short poll, for what
 * other replicas start) and looks again: by then the pool may have an idle sandbox, or a
 * free start. The starts of a burst then end one after another at the engine's rate, not
 * all together at its end.
 */
import { SandpoolError } from "../contract/error-codes.js";
import type { StartRate } from "./start-rate.js";

/**
 * Starts of one pool in flight on one replica at most, before the engine's rate is known
 * (then what the measured rate absorbs, src/pool/start-rate.ts).
 */
export const BURST_STARTS_MAX = 8;

/** One lease (or node start) waiting for its turn at a pool's gate. */
interface Waiter {
  ticket: number;
  pollMs: number;
  deadlineAt: number;
  /** Whether its timer is the poll (the first waiter's), not only its deadline. */
  polling: boolean;
  timer?: NodeJS.Timeout;
  wake: () => void;
}

/**
 * Waiters take turns in the order they came (their ticket): a start's end wakes only the
 * longest waiting, and only it polls for what other replicas start. Waking every waiter at
 * each end (as before) had a burst of a hundred leases run a hundred store lookups for each
 * sandbox that turned idle, five times a second each besides, on a machine whose CPU the
 * container starts needed; and whoever won each race was served, so a lease that came first
 * could lose every race until its deadline while later ones were served.
 */
export class StartGate {
  private readonly inFlight = new Map<string, number>();
  private readonly waiting = new Map<string, Waiter[]>();
  private tickets = 0;

  constructor(
    private readonly startRate: Pick<StartRate, "concurrency">,
    private readonly most = BURST_STARTS_MAX,
  ) {}

  /** Starts of `pool` in flight on this replica (every purpose: they share the engine). */
  count(pool: string): number {
    return this.inFlight.get(pool) ?? 0;
  }

  /**
   * Whether a lease may start a sandbox of `pool` now rather than wait for one in flight: the
   * engine absorbs another start, and no lease that came before it waits (`ticket`: a waiter's
   * own, once it waited; none for a newcomer).
   */
  mayStart(pool: string, ticket?: number): boolean {
    if (this.count(pool) >= this.startRate.concurrency(this.most)) return false;
    const first = this.waiting.get(pool)?.[0];
    return first === undefined || (ticket !== undefined && ticket < first.ticket);
  }

  /** A start of `pool` begins; call the answer once it ended, however it ended. */
  began(pool: string): () => void {
    this.inFlight.set(pool, this.count(pool) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight.set(pool, Math.max(0, this.count(pool) - 1));
      this.wakeFirst(pool);
    };
  }

  /** A waiter's place in line, kept across its waits: take one before the first. */
  ticket(): number {
    this.tickets += 1;
    return this.tickets;
  }

  /**
   * Resolves at this waiter's turn: when a start of `pool` here ends and it waited longest, or
   * when another waiter served by an idle sandbox passes on (`passOn`); the longest waiting
   * also after `pollMs` (what other replicas started), every waiter after `maxWaitMs`.
   */
  waitForTurn(pool: string, ticket: number, wait: { pollMs: number; maxWaitMs: number }): Promise<void> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        ticket,
        pollMs: wait.pollMs,
        deadlineAt: performance.now() + Math.max(0, wait.maxWaitMs),
        polling: false,
        wake: () => {
          clearTimeout(waiter.timer);
          resolve();
        },
      };
      const queue = this.waiting.get(pool) ?? [];
      this.waiting.set(pool, queue);
      let at = queue.length;
      while (at > 0 && (queue[at - 1] as Waiter).ticket > ticket) at--;
      queue.splice(at, 0, waiter);
      waiter.timer = setTimeout(() => this.expire(pool, waiter), waiter.deadlineAt - performance.now());
      this.armFirst(pool);
    });
  }

  /** A waiter found an idle sandbox: the next may find one too (a batch of starts ended). */
  passOn(pool: string): void {
    this.wakeFirst(pool);
  }

  private wakeFirst(pool: string): void {
    const first = this.waiting.get(pool)?.shift();
    if (!first) return;
    this.forgetIfEmpty(pool);
    first.wake();
    this.armFirst(pool);
  }

  private expire(pool: string, waiter: Waiter): void {
    const queue = this.waiting.get(pool);
    const at = queue?.indexOf(waiter) ?? -1;
    if (queue && at >= 0) queue.splice(at, 1);
    this.forgetIfEmpty(pool);
    waiter.wake();
    if (at === 0) this.armFirst(pool);
  }

  /** The first waiter polls; the others wait for their turn or their deadline. */
  private armFirst(pool: string): void {
    const first = this.waiting.get(pool)?.[0];
    if (!first || first.polling) return;
    first.polling = true;
    clearTimeout(first.timer);
    const ms = Math.min(first.pollMs, first.deadlineAt - performance.now());
    first.timer = setTimeout(() => this.expire(pool, first), Math.max(0, ms));
  }

  private forgetIfEmpty(pool: string): void {
    if (this.waiting.get(pool)?.length === 0) this.waiting.delete(pool);
  }
}

/** The 503 of a lease that waited at the gate past its pool's cold-start deadline. */
export function startsTooLate(pool: { name: string; coldStartTimeoutMs: number }, where = ""): SandpoolError {
  return new SandpoolError(
    "capacity.exhausted",
    `the '${pool.name}' pool's starts${where} did not keep up within its cold-start deadline (${pool.coldStartTimeoutMs} ms): a larger minIdle keeps more ready`,
    { retryAfterSeconds: 2 },
  );
}
