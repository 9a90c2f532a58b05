/**
 * The shutdown step: stops serving, optionally ends every session and destroys the
 * sandboxes (dev: nobody else will), then closes the parts in the order their work needs:
 * the jobs and loops first, then what answered calls left to settle, the usage sink, and
 * last the clients.
 */
import type { PendingWork } from "../deferred/pending-work.js";
import type { GatewayMetrics } from "../metering/gateway-metrics.js";
import type { UsageSink } from "../metering/usage-sink.js";
import { DESTROY_SANDBOX_JOB } from "../session/sandbox-settlement.js";
import type { SessionLifecycle } from "../session/session-lifecycle.js";
import type { GatewayBackends } from "./gateway-backends.js";
import type { GatewayListeners } from "./listen-gateway.js";
import type { StartedPools } from "./start-pools.js";
import type { StartedUsage } from "./start-usage.js";

export interface ClosingGateway {
  listeners: GatewayListeners;
  started: StartedPools;
  sessions: SessionLifecycle;
  usage: UsageSink;
  stopUsageDrain: StartedUsage["stopDrain"];
  pending: PendingWork;
  authentication: { close(): Promise<void> };
  metrics: GatewayMetrics;
}

export async function closeGateway(
  backends: Pick<GatewayBackends, "store" | "jobs" | "egress" | "usageJournal">,
  parts: ClosingGateway,
  options: { destroySandboxes?: boolean },
): Promise<void> {
  const { store, jobs } = backends;
  const { started, sessions, listeners } = parts;
  const closing = Promise.all([listeners.server.close(), listeners.admin?.close()]);
  if (options.destroySandboxes) {
    sessions.settlement.stopReuse();
    for (const lease of await store.listLeases()) {
      await sessions.end({ workspace: lease.workspace, sessionId: lease.sessionId }, "drained");
    }
    for (const pool of started.pools.list()) {
      for (const idle of await store.listIdle(pool.name)) {
        if (await store.takeIdle(pool.name, idle.sandboxId)) await jobs.enqueue(DESTROY_SANDBOX_JOB, idle);
      }
      for (const parked of await store.listParked(pool.name)) {
        if (await store.takeParked(pool.name, parked.sandboxId))
          await jobs.enqueue(DESTROY_SANDBOX_JOB, parked);
      }
    }
  }
  await jobs.close();
  started.edge?.stop();
  started.poolSizes.stop();
  await started.demandSync.stop();
  await closing;
  // Settlements of calls already answered: before the usage sink and the store close.
  await parts.pending.drained();
  // Egress sandboxes left to other replicas: their reconciliation takes the sockets over.
  await backends.egress?.closeAll();
  parts.stopUsageDrain();
  await parts.usage.close();
  await backends.usageJournal?.close();
  await parts.authentication.close();
  await started.sandboxes.close();
  parts.metrics.close();
}
