/**
 * The CPU meter: every few seconds, every leased sandbox's CPU time (its cgroup) is read and
 * charged to its workspace's day, including what runs between calls (a spinning thread, a
 * background process). A day is charged the larger of its Executes' wall time and its
 * sandboxes' CPU time (AdmissionStore.chargeCpu), so no CPU second goes uncharged.
 *
 * Once a workspace's day is spent, its sandboxes stop running code: each session whose
 * sandbox still burned CPU since the last reading (more than BURNING_MS, at a twentieth of a
 * CPU or more) is ended (`budget_spent`; its sandbox is
 * destroyed), so work can hide from the budget for one period of the meter at most. Idle
 * sessions are left alone: their files can still be read, and every Execute (and every
 * CreateSession) is refused with 429 `quota.exec_budget` by admission, as for any spent day.
 *
 * Any replica may run a tick, several at once included: readings only move forward in the
 * store, so each CPU millisecond is charged once, and ending a session is idempotent.
 */
import type { Logger } from "pino";
import type { PolicyService } from "../policy/policy-service.js";
import type { SandboxUsage } from "../runtime/sandbox-runtime.js";
import type { LeaseStore } from "../store/coordination/lease-store.js";
import { type Lease, type LeaseKey, runsASandbox } from "../store/coordination/records.js";
import type { Admission } from "./admission.js";

/** The background job that runs a tick (scheduled every `intervals.cpuMeterMs`). */
export const CPU_METER_JOB = "meter-cpu";
/** Sandboxes read at once: each reading is a cgroup file, or a Docker stats call. */
const READ_CONCURRENCY = 16;
/**
 * CPU (ms) burned since the last reading above which a sandbox may count as running code. An
 * idle sandbox server and interpreter burn a few ms a period; a spinning thread burns it all.
 */
export const BURNING_MS = 100;
/**
 * ... and the share of one CPU it must have burned over the time since this replica's last
 * reading of it. An idle gVisor sandbox burns a little all the time (its kernel's timers, 2 to
 * 3% of a CPU here), so a meter tick delayed on a loaded machine finds more than BURNING_MS on
 * it; a spinning thread burns what the machine gives it, a tenth of a CPU or more even with
 * 20 processes queueing for 2 CPUs (CI's own load).
 */
export const BURNING_SHARE = 0.05;

export interface CpuMeterDeps {
  store: Pick<LeaseStore, "listLeases">;
  admission: Pick<Admission, "chargeCpu">;
  policies: Pick<PolicyService, "forWorkspace">;
  /** The sandbox's usage (PoolManager.usageOf): bounded in time, undefined when unknown. */
  usageOf: (sandbox: Lease["sandbox"]) => Promise<SandboxUsage | undefined>;
  /** Ends a session (SessionLifecycle.end). */
  end: (key: LeaseKey, reason: "budget_spent") => Promise<boolean>;
  log: Logger;
  /** Counts what was charged and what was stopped. */
  observe?: (tick: MeterTick) => void;
  now?: () => number;
}

export interface MeterTick {
  /** Sandboxes read. */
  read: number;
  /** CPU charged by this tick (ms), all workspaces together. */
  chargedMs: number;
  /** Sessions ended because their workspace's day was spent while their sandbox ran code. */
  stopped: number;
}

interface Reading {
  lease: Lease;
  chargedMs: number;
  usedMs: number;
  /** Since this replica's last reading of the sandbox (since its CPU baseline, for the first). */
  elapsedMs: number;
}

export class CpuMeter {
  private running: Promise<MeterTick> | undefined;
  /** When this replica last read each session's sandbox. */
  private readonly readAt = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly deps: CpuMeterDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** One round over every leased sandbox; a tick asked for while one runs joins it. */
  tick(): Promise<MeterTick> {
    this.running ??= this.round().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async round(): Promise<MeterTick> {
    // A hibernated session burns nothing: its CPU was charged as it was saved.
    const leases = (await this.deps.store.listLeases()).filter(runsASandbox);
    const listed = new Set(leases.map(readKey));
    for (const key of this.readAt.keys()) if (!listed.has(key)) this.readAt.delete(key);
    const readings: Reading[] = [];
    for (let i = 0; i < leases.length; i += READ_CONCURRENCY) {
      const batch = await Promise.all(leases.slice(i, i + READ_CONCURRENCY).map((lease) => this.read(lease)));
      for (const reading of batch) if (reading) readings.push(reading);
    }
    const stopped = await this.stopSpentWork(readings);
    const tick = {
      read: readings.length,
      chargedMs: readings.reduce((sum, reading) => sum + reading.chargedMs, 0),
      stopped,
    };
    this.deps.observe?.(tick);
    return tick;
  }

  private async read(lease: Lease): Promise<Reading | undefined> {
    try {
      const usage = await this.deps.usageOf(lease.sandbox);
      if (!usage) return undefined;
      const charged = await this.deps.admission.chargeCpu(lease, usage.cpuSeconds);
      const now = this.now();
      const key = readKey(lease);
      // A first reading charges the CPU since the sandbox's baseline: when it started, or was
      // parked for reuse (an idle sandbox in the pool burns a little meanwhile, too).
      const baselineAt = Math.max(lease.sandbox.createdAt, lease.sandbox.parkedAt ?? 0);
      const elapsedMs = now - (this.readAt.get(key) ?? baselineAt);
      this.readAt.set(key, now);
      return { lease, chargedMs: charged.chargedMs, usedMs: charged.usedMs, elapsedMs };
    } catch (error) {
      this.deps.log.warn({ err: error, session: lease.sessionId }, "could not charge a sandbox's CPU");
      return undefined;
    }
  }

  /** Ends the sessions still running code in workspaces whose day is spent. */
  private async stopSpentWork(readings: Reading[]): Promise<number> {
    const burning = readings.filter(
      (reading) => reading.chargedMs > BURNING_MS && reading.chargedMs >= BURNING_SHARE * reading.elapsedMs,
    );
    const spentByWorkspace = new Map<string, boolean>();
    let stopped = 0;
    for (const { lease } of burning) {
      let spent = spentByWorkspace.get(lease.workspace);
      if (spent === undefined) {
        const policy = await this.deps.policies.forWorkspace(lease.workspace);
        // The highest counter any reading of the workspace saw this tick.
        const used = Math.max(
          ...readings.filter((r) => r.lease.workspace === lease.workspace).map((r) => r.usedMs),
        );
        spent = used >= policy.execSecondsPerDay * 1000;
        spentByWorkspace.set(lease.workspace, spent);
      }
      if (!spent) continue;
      const key = { workspace: lease.workspace, sessionId: lease.sessionId };
      if (await this.deps.end(key, "budget_spent").catch(() => false)) {
        stopped++;
        this.deps.log.warn(
          { session: lease.sessionId, workspace: lease.workspace },
          "ended a session that ran code past its workspace's spent execution budget",
        );
      }
    }
    return stopped;
  }
}

const readKey = (lease: Lease) => `${lease.workspace}\u0000${lease.sessionId}`;
