/**
 * The coordination store in one process's memory: dev mode and unit tests. Same semantics
 * as the Redis store (expiring slots and members, atomic pops and takes), without the
 * network. It is made of one part per job (store-of-parts.ts), as the Redis store is.
 *
 * Every method is atomic because nothing awaits between its read and its write: a method
 * that does what another does calls that one's synchronous body (`...Now`), never the async
 * method, whose await would let a call of another task (a takeLease) run in between, as a
 * Redis script never can.
 */
import type { CoordinationStore } from "./coordination-store.js";
import { MemoryAdmission } from "./memory-admission.js";
import { MemoryBroadcast } from "./memory-broadcast.js";
import { MemoryLeases } from "./memory-leases.js";
import { MemoryPoolDemand } from "./memory-pool-demand.js";
import { MemoryPoolLedger } from "./memory-pool-ledger.js";
import { MemoryUsageBacklog } from "./memory-usage-backlog.js";
import { StoreOfParts } from "./store-of-parts.js";

export class MemoryCoordinationStore extends StoreOfParts implements CoordinationStore {
  private readonly broadcast: MemoryBroadcast;

  constructor() {
    const admission = new MemoryAdmission();
    const usage = new MemoryUsageBacklog();
    const broadcast = new MemoryBroadcast();
    const leases = new MemoryLeases(admission, usage);
    super({
      admission,
      ledger: new MemoryPoolLedger(),
      leases,
      leaseListings: leases,
      demand: new MemoryPoolDemand(),
      broadcast,
      usage,
    });
    this.broadcast = broadcast;
  }

  async close() {
    this.broadcast.unsubscribeAll();
  }
}
