/**
 * The in-flight marks of the starts this replica runs, renewed while they run: each start's
 * mark lapses IN_FLIGHT_MARK_MS after its last renewal, so one left by a replica that died
 * lapses within seconds and reconciliation frees its place (src/pool/reclaim-in-flight.ts).
 * One timer for all of them, running only while some start is in flight, renews each
 * pool's marks in one store call.
 */
import type { Logger } from "pino";
import type { PoolLedger } from "../store/coordination/pool-ledger.js";

/** How long a mark holds without renewal: a start's, and a hand-out's (until its lease is recorded). */
export const IN_FLIGHT_MARK_MS = 15_000;
/** Renewed this often: a replica stalled (a GC pause, a busy event loop) for less than the rest keeps its marks. */
const RENEW_EVERY_MS = IN_FLIGHT_MARK_MS / 3;

export class InFlightMarks {
  private readonly starts = new Map<string, Set<string>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<PoolLedger, "renewInFlight">,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  /** When a mark set now lapses. */
  until(): number {
    return this.now() + IN_FLIGHT_MARK_MS;
  }

  /** A start began (its mark set with `until()`): its mark is renewed until `end`. */
  begin(pool: string, sandboxId: string): void {
    let ids = this.starts.get(pool);
    if (!ids) {
      ids = new Set();
      this.starts.set(pool, ids);
    }
    ids.add(sandboxId);
    this.timer ??= setInterval(() => void this.renew(), RENEW_EVERY_MS);
    this.timer.unref();
  }

  /** The start ended: what follows (idle, handed out, removed) ends or moves its mark. */
  end(pool: string, sandboxId: string): void {
    const ids = this.starts.get(pool);
    ids?.delete(sandboxId);
    if (ids?.size === 0) this.starts.delete(pool);
    if (this.starts.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async renew(): Promise<void> {
    const now = this.now();
    for (const [pool, ids] of this.starts) {
      await this.store
        .renewInFlight(pool, [...ids], now + IN_FLIGHT_MARK_MS, now)
        .catch((error: unknown) =>
          this.log.warn({ err: error, pool }, "could not renew starts' in-flight marks"),
        );
    }
  }
}
