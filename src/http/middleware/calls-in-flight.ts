/**
 * A per-workspace bound on contract calls in flight (`limits.maxCallsInFlightPerWorkspace`):
 * every call holds some of the gateway's memory (a buffered sandbox answer, an upload's
 * buffers), so one tenant sending thousands at once must not starve the others. Past the
 * bound the call is refused at once with 429 `quota.calls_in_flight` and `Retry-After: 1`.
 *
 * Counted in this process only: each replica admits up to the bound, so a deployment of N
 * replicas admits up to N times it per workspace. A call counts from authentication until
 * its handler returns; a download's body streaming out afterwards is not counted (it holds
 * no buffered answer). A streamed Execute holds its place until its stream ends
 * (`holdCallInFlight`): it runs user code and reads the sandbox's answer all along.
 */
import type { Context } from "hono";
import { SandpoolError } from "../../contract/error-codes.js";
import type { GatewayEnv } from "../gateway-env.js";

const RETRY_AFTER_SECONDS = 1;
/**
 * The default bound: a burst of a hundred new sessions, each with its first call, fits in it
 * (agents fan out; docs/session-churn.md, "Bursts").
 */
export const DEFAULT_CALLS_IN_FLIGHT_PER_WORKSPACE = 256;

export class CallsInFlight {
  readonly #byWorkspace = new Map<string, number>();

  constructor(readonly maxPerWorkspace: number = DEFAULT_CALLS_IN_FLIGHT_PER_WORKSPACE) {}

  count(workspace: string): number {
    return this.#byWorkspace.get(workspace) ?? 0;
  }

  /** Admits one call of `workspace` (or throws `quota.calls_in_flight`); release it exactly once. */
  enter(workspace: string): () => void {
    const current = this.count(workspace);
    if (current >= this.maxPerWorkspace) {
      throw new SandpoolError(
        "quota.calls_in_flight",
        `the workspace already has ${this.maxPerWorkspace} calls in flight (the deployment's limits.maxCallsInFlightPerWorkspace raises it)`,
        { retryAfterSeconds: RETRY_AFTER_SECONDS },
      );
    }
    this.#byWorkspace.set(workspace, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.count(workspace) - 1;
      // Idle workspaces leave no entry behind, so the map holds only workspaces with calls.
      if (left > 0) this.#byWorkspace.set(workspace, left);
      else this.#byWorkspace.delete(workspace);
    };
  }
}

/** Runs the rest of the call (`next`) counted in flight; after authentication: the principal names the workspace. */
export async function withinCallsInFlight(
  calls: CallsInFlight,
  c: Context<GatewayEnv>,
  next: () => Promise<void>,
  refused?: (c: Context<GatewayEnv>, refusal: unknown) => void,
): Promise<void> {
  let release: () => void;
  try {
    release = calls.enter(c.get("principal").workspace);
  } catch (refusal) {
    refused?.(c, refusal);
    throw refusal;
  }
  let held = false;
  c.set("holdCallInFlight", () => {
    held = true;
    return release;
  });
  try {
    await next();
  } finally {
    if (!held) release();
  }
}
