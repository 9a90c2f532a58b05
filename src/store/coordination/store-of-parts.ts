/**
 * A coordination store is made of parts, one per job (admission-store.ts, pool-ledger.ts,
 * lease-store.ts, pool-demand-exchange.ts, broadcast.ts, usage-backlog.ts). `StoreOfParts` is
 * the base of both stores: it answers each method with the part that does that job, bound to
 * that part, so neither store has a method that only passes a call on, and a consumer that
 * needs one part can be given that part alone.
 */
import type { AdmissionStore } from "./admission-store.js";
import type { Broadcast } from "./broadcast.js";
import type { CoordinationStore } from "./coordination-store.js";
import type { LeaseListings, LeaseStore } from "./lease-store.js";
import type { PoolDemandExchange } from "./pool-demand-exchange.js";
import type { PoolLedger } from "./pool-ledger.js";
import type { UsageBacklog } from "./usage-backlog.js";

export interface StoreParts {
  admission: AdmissionStore;
  ledger: PoolLedger;
  /** The leases, which also send the call ends they put off (with their usage). */
  leases: Omit<LeaseStore, keyof LeaseListings> & Pick<UsageBacklog, "flushCallEnds">;
  /** The leases' reads across workspaces (the same object as `leases`, where one does both). */
  leaseListings: LeaseListings;
  demand: PoolDemandExchange;
  broadcast: Broadcast;
  usage: Omit<UsageBacklog, "flushCallEnds">;
}

/** Every method of the store but `close`, which each store writes itself (what it closes is its own). */
export type StoreOfPartsMethods = Omit<CoordinationStore, "close">;

/**
 * Copies onto `target` each method of `part` (its prototype chain's), bound to the part. A name
 * `target` already answers (its own `close`, say) is left alone, so a subclass's method wins.
 */
function exposeMethods(target: object, part: object): void {
  for (let proto = Object.getPrototypeOf(part); proto && proto !== Object.prototype; ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const method = (part as Record<string, unknown>)[name];
      if (name === "constructor" || name in target || typeof method !== "function") continue;
      Object.defineProperty(target, name, { value: method.bind(part), writable: true, configurable: true });
    }
    proto = Object.getPrototypeOf(proto);
  }
}

class JoinedParts {
  constructor(parts: StoreParts) {
    for (const part of Object.values(parts)) exposeMethods(this, part);
  }
}

/** The base class of a store made of `StoreParts`: `super(parts)` exposes their methods. */
export const StoreOfParts = JoinedParts as unknown as new (parts: StoreParts) => StoreOfPartsMethods;
