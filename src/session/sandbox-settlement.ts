/**
 * What follows a session's end, off its answer (a job, retried): the sandbox's usage read
 * (before anything removes its cgroup) and recorded, the CPU burned since the meter's last
 * reading charged, then the sandbox scrubbed and parked for its workspace's next session
 * where the end and the policy allow it (src/pool/sandbox-reuse.ts), else queued for
 * destruction. Hibernation settles a sandbox the same way before its save.
 */
import type { Logger } from "pino";
import type { Admission } from "../admission/admission.js";
import type { SessionHibernation } from "../hibernate/session-hibernation.js";
import type { JobRunner } from "../jobs/job-runner.js";
import { stableEventId } from "../metering/usage-record.js";
import type { UsageSink } from "../metering/usage-sink.js";
import type { PolicyService } from "../policy/policy-service.js";
import type { SandboxPool } from "../pool/sandbox-pool.js";
import type { SandboxUsage } from "../runtime/sandbox-runtime.js";
import type { Lease } from "../store/coordination/records.js";

export const DESTROY_SANDBOX_JOB = "destroy-sandbox";
/** After a session's end is answered: its sandbox's usage settled, then the sandbox reused or destroyed. */
export const SETTLE_ENDED_SESSION_JOB = "settle-ended-session";

export type EndReason =
  | "destroyed"
  | "expired"
  | "sandbox_failed"
  | "drained"
  | "ended_by_operator"
  /** The node holding the sandbox stopped heart-beating (roles edge and node). */
  | "node_lost"
  /** Its sandbox ran code after its workspace's day was spent (src/admission/cpu-meter.ts). */
  | "budget_spent";

/** Ends after which the sandbox is sound and may serve its workspace's next session. */
export const REUSABLE_ENDS: ReadonlySet<EndReason> = new Set(["destroyed", "expired"]);

/** What the settle job needs of an ended session (`SandboxSettlement.settleEnded`). */
export interface EndedSession {
  lease: Lease;
  reason: EndReason;
}

export interface SandboxSettlementDeps {
  pools: Pick<SandboxPool, "usageOf" | "recycle">;
  admission: Pick<Admission, "chargeCpu">;
  policies: Pick<PolicyService, "forWorkspace">;
  jobs: Pick<JobRunner, "enqueue">;
  usage: UsageSink;
  log: Logger;
  hibernation?: Pick<SessionHibernation, "forget">;
}

export class SandboxSettlement {
  /** Set as the gateway shuts down destroying its sandboxes: none is parked after that. */
  private reuseStopped = false;

  constructor(private readonly deps: SandboxSettlementDeps) {}

  /**
   * The rest of a session's end, off the answer (a job, retried): the sandbox's usage read
   * (before anything removes its cgroup) and recorded, the CPU burned since the meter's last
   * reading charged (the meter forgets the session), then the sandbox scrubbed and parked for
   * its workspace's next session when the end allows it and the policy wants it
   * (src/pool/sandbox-reuse.ts), else queued for destruction.
   */
  async settleEnded({ lease, reason }: EndedSession): Promise<void> {
    if (lease.hibernation) {
      await this.deps.hibernation?.forget(lease);
      // A save under way when it ended may have left the container (the saver's next step
      // finds no lease and stops): destroying an absent one is harmless.
      if (lease.hibernation.phase === "saving")
        await this.deps.jobs.enqueue(DESTROY_SANDBOX_JOB, lease.sandbox);
      return;
    }
    await this.settleSandbox(lease);
    if (REUSABLE_ENDS.has(reason) && (await this.reuseWanted(lease.workspace))) {
      if (await this.deps.pools.recycle(lease.sandbox, lease.workspace)) return;
    }
    await this.deps.jobs.enqueue(DESTROY_SANDBOX_JOB, lease.sandbox);
  }

  /**
   * The session's sandbox as it stops serving it (its session ended, or it hibernates):
   * its usage read (before anything removes its cgroup) and recorded, and the CPU burned
   * since the meter's last reading charged (the meter forgets the session).
   */
  async settleSandbox(lease: Lease): Promise<void> {
    const used = await this.deps.pools.usageOf(lease.sandbox);
    if (used) this.recordSandboxUsage(lease, used);
    await this.deps.admission.chargeCpu(lease, used?.cpuSeconds, true).catch((error: unknown) => {
      this.deps.log.warn({ err: error, session: lease.sessionId }, "could not charge a sandbox's last CPU");
    });
  }

  /** From now on, ended sessions' sandboxes are destroyed, never parked (a shutdown that destroys them all). */
  stopReuse(): void {
    this.reuseStopped = true;
  }

  private async reuseWanted(workspace: string): Promise<boolean> {
    if (this.reuseStopped) return false;
    try {
      return (await this.deps.policies.forWorkspace(workspace)).sandboxReuse;
    } catch {
      return false;
    }
  }

  /**
   * The sandbox's own account of the session, from its cgroup: CPU time since it became
   * ready (its server's start-up is nobody's) or was parked for this session (reuse), and
   * peak memory where the engine reports one that is the session's own (the memory held at
   * the end rides along as detail). A reused sandbox's counters carry its earlier sessions'
   * too: without the baseline taken at its park, its CPU is not recorded, and a peak the
   * kernel could not start anew is not either.
   */
  private recordSandboxUsage(lease: Lease, used: SandboxUsage): void {
    const { sandbox } = lease;
    const common = {
      workspace: lease.workspace,
      sessionId: lease.sessionId,
      sandboxId: sandbox.sandboxId,
    };
    // The settling job may run again after a crash: the same ids, counted once.
    const idOf = (kind: string) => stableEventId(lease.workspace, lease.sessionId, sandbox.sandboxId, kind);
    const reused = (sandbox.uses ?? 0) > 0;
    if (!reused || sandbox.cpuBaseMs !== undefined) {
      this.deps.usage.record({
        ...common,
        eventId: idOf("sandbox_cpu"),
        kind: "sandbox_cpu",
        quantity: Math.max(0, Math.round(used.cpuSeconds * 1000 - (sandbox.cpuBaseMs ?? 0))),
        ...(used.memoryBytes === undefined ? {} : { detail: { memoryBytes: used.memoryBytes } }),
      });
    }
    if (used.memoryPeakBytes !== undefined && sandbox.memoryPeakCarried !== true) {
      this.deps.usage.record({
        ...common,
        eventId: idOf("sandbox_memory_peak"),
        kind: "sandbox_memory_peak",
        quantity: used.memoryPeakBytes,
      });
    }
  }
}
