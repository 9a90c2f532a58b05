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
import { type Turn, TurnQueue } from "./turn-queue.js";

/**
 * Starts of one pool in flight on one replica at most, before the engine's rate is known
 * (then what the measured rate absorbs, src/pool/start-rate.ts).
 */
export const BURST_STARTS_MAX = 8;

/**
 * Waiters take turns (src/pool/turn-queue.ts: round the workspaces, in arrival order within
 * each): a start's end wakes only the waiter whose turn it is, and only it polls for what
 * other replicas start. Waking every waiter at each end (as before) had a burst of a hundred
 * leases run a hundred store lookups for each sandbox that turned idle, five times a second
 * each besides, on a machine whose CPU the container starts needed; and whoever won each
 * race was served, so a lease that came first could lose every race until its deadline.
 */
export class StartGate {
  private readonly inFlight = new Map<string, number>();
  private readonly waiting = new Map<string, TurnQueue>();
  /** Per pool, the tickets given their turn and not back in line or gone: they may start. */
  private readonly given = new Map<string, Set<number>>();
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
   * engine absorbs another start, and no lease waits or this one was given its turn
   * (`ticket`: a waiter's own, once it waited; none for a newcomer).
   */
  mayStart(pool: string, ticket?: number): boolean {
    if (this.count(pool) >= this.startRate.concurrency(this.most)) return false;
    if (this.waiting.get(pool)?.empty ?? true) return true;
    return ticket !== undefined && (this.given.get(pool)?.has(ticket) ?? false);
  }

  /** A start of `pool` begins; call the answer once it ended, however it ended. */
  began(pool: string): () => void {
    this.inFlight.set(pool, this.count(pool) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight.set(pool, Math.max(0, this.count(pool) - 1));
      this.giveNextTurn(pool);
    };
  }

  /** A waiter's place in line, kept across its waits: take one before the first. */
  ticket(): number {
    this.tickets += 1;
    return this.tickets;
  }

  /**
   * Resolves at this waiter's turn: when a start of `pool` here ends, or a waiter served by
   * an idle sandbox passes on (`passOn`); the next in turn also after `pollMs` (what other
   * replicas started), every waiter after `maxWaitMs`. `key`: its workspace, which turns go
   * round. A waiter given its turn that waits again keeps it.
   */
  waitForTurn(
    pool: string,
    ticket: number,
    wait: { key?: string; pollMs: number; maxWaitMs: number },
  ): Promise<void> {
    return new Promise((resolve) => {
      const turn: Turn = {
        ticket,
        key: wait.key ?? "",
        pollMs: wait.pollMs,
        deadlineAt: performance.now() + Math.max(0, wait.maxWaitMs),
        polling: false,
        wake: () => {
          clearTimeout(turn.timer);
          resolve();
        },
      };
      const queue = this.waiting.get(pool) ?? new TurnQueue();
      this.waiting.set(pool, queue);
      queue.add(turn, this.given.get(pool)?.delete(ticket) ?? false);
      turn.timer = setTimeout(() => this.expire(pool, turn), turn.deadlineAt - performance.now());
      this.armNext(pool);
    });
  }

  /** A waiter found an idle sandbox: the next may find one too (a batch of starts ended). */
  passOn(pool: string): void {
    this.giveNextTurn(pool);
  }

  /** A waiter is done waiting (served, started or refused): its turn is no longer held. */
  leave(pool: string, ticket: number): void {
    const given = this.given.get(pool);
    given?.delete(ticket);
    if (given?.size === 0) this.given.delete(pool);
  }

  private giveNextTurn(pool: string): void {
    const turn = this.waiting.get(pool)?.take();
    if (!turn) return;
    this.give(pool, turn);
    this.armNext(pool);
  }

  private give(pool: string, turn: Turn): void {
    this.forgetIfEmpty(pool);
    const given = this.given.get(pool) ?? new Set<number>();
    this.given.set(pool, given);
    given.add(turn.ticket);
    turn.wake();
  }

  /** Its timer ran out: the next in turn polled (it has its turn), any other's deadline came. */
  private expire(pool: string, turn: Turn): void {
    const queue = this.waiting.get(pool);
    const wasNext = queue?.remove(turn) ?? false;
    if (wasNext) {
      this.give(pool, turn);
      this.armNext(pool);
    } else {
      this.forgetIfEmpty(pool);
      turn.wake();
    }
  }

  private forgetIfEmpty(pool: string): void {
    if (this.waiting.get(pool)?.empty) this.waiting.delete(pool);
  }

  /** The next in turn polls; the others wait for their turn or their deadline. */
  private armNext(pool: string): void {
    const next = this.waiting.get(pool)?.next();
    if (!next || next.polling) return;
    next.polling = true;
    clearTimeout(next.timer);
    const ms = Math.min(next.pollMs, next.deadlineAt - performance.now());
    next.timer = setTimeout(() => this.expire(pool, next), Math.max(0, ms));
  }
}

/**
 * The 503 of a lease that waited `waited.ms`, its pool's `waited.setting`: at the gate, its
 * turn; behind a failing image's back-off, the cold-start deadline.
 */
export function startsTooLate(
  pool: { name: string },
  waited: { ms: number; setting: "startQueueTimeoutMs" | "coldStartTimeoutMs" },
  where = "",
): SandpoolError {
  return new SandpoolError(
    "capacity.exhausted",
    `the '${pool.name}' pool's starts${where} did not keep up: the lease waited ${waited.ms} ms (the pool's ${waited.setting}); a larger minIdle keeps more ready`,
    { retryAfterSeconds: 2 },
  );
}
