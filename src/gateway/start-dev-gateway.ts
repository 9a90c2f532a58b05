/**
 * Dev mode's assembly around the gateway: the in-memory coordination store and in-process
 * jobs over a migrated PGlite and the runtime the caller chose, with the pools warmed before
 * it answers. `sandpool dev` and the integration tests' gateway both start it this way.
 */
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { GatewayConfig } from "../config/gateway-config.js";
import { InProcessJobRunner } from "../jobs/in-process-job-runner.js";
import type { SandboxRuntime } from "../runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../store/coordination/memory-store.js";
import type { Database } from "../store/sql/database-types.js";
import { migrateToLatest } from "../store/sql/migrate.js";
import { type RunningGateway, startGateway } from "./start-gateway.js";

export interface DevGateway {
  gateway: RunningGateway;
  store: MemoryCoordinationStore;
  /**
   * Stops serving, ends every session and destroys the sandboxes (nobody else will serve
   * them), then closes the runtime, the store and the database.
   */
  close(): Promise<void>;
}

export async function startDevGateway(
  config: GatewayConfig,
  backends: { db: Kysely<Database>; runtime: SandboxRuntime },
  log: Logger,
): Promise<DevGateway> {
  const { db, runtime } = backends;
  await migrateToLatest(db);
  const store = new MemoryCoordinationStore();
  const gateway = await startGateway(config, { store, db, runtime, jobs: new InProcessJobRunner(log) }, log);
  await gateway.services.pools.warmAll();
  return {
    gateway,
    store,
    close: async () => {
      await gateway.close({ destroySandboxes: true });
      await runtime.close();
      await store.close();
      await db.destroy();
    },
  };
}
