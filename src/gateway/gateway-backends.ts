/** What the mode chose for the gateway to run on (dev: memory, PGlite, in-process jobs; serve: Redis, Postgres, BullMQ). */
import type { Kysely } from "kysely";
import type { GatewayEgress } from "../egress/gateway-egress.js";
import type { JobRunner } from "../jobs/job-runner.js";
import type { UsageJournal } from "../metering/usage-journal.js";
import type { NodeRegistry } from "../roles/shared/node-registry.js";
import type { SandboxRuntime } from "../runtime/sandbox-runtime.js";
import type { SecretsReader } from "../secrets/workspace-secrets.js";
import type { CoordinationStore } from "../store/coordination/coordination-store.js";
import type { Database } from "../store/sql/database-types.js";

export interface GatewayBackends {
  store: CoordinationStore;
  /** Role edge: the node registry; sessions are placed on nodes and their calls routed there. */
  nodes?: NodeRegistry;
  db: Kysely<Database>;
  /** This host's sandbox runtime: required unless the gateway is an edge (`nodes`), which starts none. */
  runtime?: SandboxRuntime;
  jobs: JobRunner;
  /** The egress proxy the runtime attaches to egress sandboxes; bound here to the policy. */
  egress?: GatewayEgress;
  /**
   * Where egress and CreateSession read a workspace's secrets, in place of the gateway's own
   * store over the database (a test's fixed secrets); absent: that store.
   */
  secrets?: SecretsReader;
  /** Where usage records are journaled before answers are released (`sandpool serve`). */
  usageJournal?: UsageJournal;
}
