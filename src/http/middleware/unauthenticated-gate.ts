/**
 * A bound on requests in flight that have not passed authentication yet
 * (`limits.maxUnauthenticatedRequests`): anyone can open them, and each may hold memory and
 * a verification (a JWKS fetch) for a while, so past the bound the gateway answers 503
 * `request.busy` with `Retry-After` at once instead of queueing more. A request leaves the
 * count the moment its bearer token is accepted (`passedAuthentication`, called by the
 * contract's and the admin API's authentication) or when it is answered, whichever is first.
 *
 * Health (`/healthz`, `/readyz`) is never counted nor refused: an orchestrator must still see
 * a gateway that is busy fending off anonymous load. `/metrics` is counted like any other
 * request anyone can send (it renders every series: work, not a probe), and leaves the count
 * once its bearer token (`metrics.token`) is accepted.
 */
import type { Context } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";

export const OPS_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz"]);
const RETRY_AFTER_SECONDS = 1;

/** Counts requests not yet authenticated; `enter` refuses once `max` are in flight. */
export class UnauthenticatedGate {
  #inFlight = 0;

  constructor(readonly max: number) {}

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Admits one request (or throws `request.busy`); the returned release is safe to call twice. */
  enter(): () => void {
    if (this.#inFlight >= this.max) {
      throw new SandpoolError("request.busy", "too many requests are waiting for authentication", {
        retryAfterSeconds: RETRY_AFTER_SECONDS,
      });
    }
    this.#inFlight += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight -= 1;
    };
  }
}

/** The release of each request still counted, by request (shared by the contract and admin apps). */
const releases = new WeakMap<Request, () => void>();

/** Called by authentication once a bearer token is accepted: the request no longer counts. */
export function passedAuthentication(c: Context): void {
  releases.get(c.req.raw)?.();
  releases.delete(c.req.raw);
}

/** Runs the rest of the request (`next`) counted by `gate` until it passes authentication. */
export async function withinUnauthenticatedBound(
  gate: UnauthenticatedGate,
  c: Context,
  next: () => Promise<void>,
): Promise<void> {
  if (OPS_PATHS.has(c.req.path)) return next();
  const release = gate.enter();
  releases.set(c.req.raw, release);
  try {
    await next();
  } finally {
    release();
    releases.delete(c.req.raw);
  }
}
