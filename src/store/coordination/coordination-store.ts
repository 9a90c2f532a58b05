/**
 * All shared, fast-changing state, as one store: admission counters (admission-store.ts),
 * the warm pools' ledger (pool-ledger.ts), the leases (lease-store.ts), the pools' shared
 * demand counts (pool-demand-exchange.ts), the broadcast between replicas (broadcast.ts) and
 * the usage backlog (usage-backlog.ts).
 * The memory implementation serves dev mode and unit tests; the Redis one serves any number
 * of replicas. Both pass one shared test suite. Consumers take only the part they use.
 *
 * Everything with an owner is kept with an expiry (slots, pool members, leases), so a
 * holder that crashes ages out instead of leaking capacity.
 */
import type { AdmissionStore } from "./admission-store.js";
import type { Broadcast } from "./broadcast.js";
import type { LeaseStore } from "./lease-store.js";
import type { PoolDemandExchange } from "./pool-demand-exchange.js";
import type { PoolLedger } from "./pool-ledger.js";
import type { UsageBacklog } from "./usage-backlog.js";

export type { AdmissionStore, Broadcast, LeaseStore, PoolDemandExchange, PoolLedger, UsageBacklog };

export interface CoordinationStore
  extends AdmissionStore,
    PoolLedger,
    LeaseStore,
    PoolDemandExchange,
    Broadcast,
    UsageBacklog {
  close(): Promise<void>;
}
