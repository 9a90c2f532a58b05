/**
 * The contract calls this replica answered per minute over the last hour, with its server
 * errors among them: every 5xx answer (the gateway's own 500 and 503s, capacity and store
 * ones included, and a sandbox's 5xx passed through), and of those the sandbox failures (502
 * `sandbox.unreachable`, `sandbox.bad_answer`; 504 `sandbox.timeout`). Counted where the
 * request counter `sandpool_http_requests_total` is (src/http/middleware/observe-request.ts),
 * kept in memory: one replica's view, gone when it restarts. A deployment's view is the sum of
 * every replica's, which Prometheus has (`sandpool_http_requests_total{status=~"5.."}`).
 */
import { z } from "zod";

const MINUTE_MS = 60_000;
/** The last hour, and the minute under way. */
const KEPT = 61;

/** One minute of answers, as the admin API's pools view carries it: the schema is its one description. */
export const answerMinuteSchema = z.object({
  start: z.string().meta({ description: "The minute's start." }),
  calls: z.number().int().meta({ description: "Contract calls answered in that minute." }),
  serverErrors: z.number().int().meta({
    description:
      "Of those, 5xx answers: server.internal, the 503s (capacity.exhausted, store.unavailable, session.resume_failed...) and the sandbox failures.",
  }),
  sandboxErrors: z.number().int().meta({
    description:
      "Of those, sandbox failures: 502 sandbox.unreachable or sandbox.bad_answer, 504 sandbox.timeout.",
  }),
});

export type AnswerMinute = z.output<typeof answerMinuteSchema>;

interface Slot {
  minute: number;
  calls: number;
  serverErrors: number;
  sandboxErrors: number;
}

export class AnswerMinutes {
  private readonly slots: Slot[] = [];

  constructor(private readonly now: () => number = Date.now) {}

  /** One contract call answered with `status`. */
  count(status: number): void {
    const minute = Math.floor(this.now() / MINUTE_MS);
    const index = minute % KEPT;
    let slot = this.slots[index];
    if (!slot || slot.minute !== minute) {
      slot = { minute, calls: 0, serverErrors: 0, sandboxErrors: 0 };
      this.slots[index] = slot;
    }
    slot.calls += 1;
    if (status >= 500) slot.serverErrors += 1;
    if (status === 502 || status === 504) slot.sandboxErrors += 1;
  }

  /** The last 60 whole minutes and the one under way, oldest first; minutes without calls are zeros. */
  lastHour(): AnswerMinute[] {
    const current = Math.floor(this.now() / MINUTE_MS);
    const minutes: AnswerMinute[] = [];
    for (let minute = current - KEPT + 1; minute <= current; minute++) {
      const slot = this.slots[minute % KEPT];
      const kept = slot?.minute === minute ? slot : undefined;
      minutes.push({
        start: new Date(minute * MINUTE_MS).toISOString(),
        calls: kept?.calls ?? 0,
        serverErrors: kept?.serverErrors ?? 0,
        sandboxErrors: kept?.sandboxErrors ?? 0,
      });
    }
    return minutes;
  }
}
