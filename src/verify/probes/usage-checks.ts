/**
 * The figures a workspace is billed on are its sessions' own: on a reused sandbox, the next
 * session's CPU and memory peak start from its own baseline, not the earlier session's. Needs
 * the admin API (per-workspace usage and which sandbox a session ran in).
 */
import type { CheckContext, CheckProbe } from "../probe.js";
import { type AdminView, VerifyCallError } from "../verify-client.js";

const MIB = 1024 * 1024;
/** What the first session holds and burns: clearly above what an idle session shows. */
const HOLD_BYTES = 160 * MIB;
const BURN_SECONDS = 1.5;
const RECORDED_WITHIN_MS = 30_000;

type Figures = { cpuMs: number; cpuCount: number; memoryPeak: number; memoryCount: number };

async function figures(admin: AdminView, workspace: string, from: Date): Promise<Figures> {
  const usage = await admin.usage(workspace, from);
  return {
    cpuMs: usage.get("sandbox_cpu")?.quantity ?? 0,
    cpuCount: usage.get("sandbox_cpu")?.count ?? 0,
    memoryPeak: usage.get("sandbox_memory_peak")?.quantity ?? 0,
    memoryCount: usage.get("sandbox_memory_peak")?.count ?? 0,
  };
}

/** Waits until the workspace's usage holds `sessions` sessions' end figures (usage is written behind). */
async function recorded(admin: AdminView, workspace: string, from: Date, sessions: number): Promise<Figures> {
  const deadline = Date.now() + RECORDED_WITHIN_MS;
  for (;;) {
    const now = await figures(admin, workspace, from);
    if (now.cpuCount >= sessions || Date.now() > deadline) return now;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function runUsage(
  context: CheckContext,
  admin: AdminView,
): Promise<{ pass: boolean; evidence: string }> {
  const from = new Date(Date.now() - 1_000);
  const first = await context.session();
  const placed = await admin.sessionOf(first.id);
  if (!placed) return { pass: false, evidence: "the admin API does not list the session just created" };
  const before = await figures(admin, placed.workspace, from);
  await first.client.tool(
    first.id,
    "code_execution",
    `held = bytearray(${HOLD_BYTES})\nfor i in range(0, len(held), 4096): held[i] = 1\nimport time\nend = time.process_time() + ${BURN_SECONDS}\nwhile time.process_time() < end: pass\ndel held`,
  );
  await first.client.deleteSession(first.id);
  const afterFirst = await recorded(admin, placed.workspace, from, before.cpuCount + 1);
  if (afterFirst.cpuCount <= before.cpuCount)
    return {
      pass: true,
      evidence: "the deployment records no sandbox CPU or memory figures (no cgroup readings)",
    };
  const second = await context.sessionOn(placed.sandboxId);
  const secondPlaced = await admin.sessionOf(second.id);
  await second.client.tool(second.id, "code_execution", "print('idle')");
  await second.client.deleteSession(second.id);
  const afterSecond = await recorded(admin, placed.workspace, from, afterFirst.cpuCount + 1);
  if (afterSecond.cpuCount <= afterFirst.cpuCount)
    return {
      pass: true,
      evidence:
        "the next session's figures were not recorded: nothing billed rather than an earlier session's",
    };
  const cpuMs = afterSecond.cpuMs - afterFirst.cpuMs;
  const peak = afterSecond.memoryPeak - afterFirst.memoryPeak;
  const where =
    secondPlaced?.sandboxId === placed.sandboxId
      ? `both on sandbox ${placed.sandboxId}`
      : `on sandboxes ${placed.sandboxId} and ${secondPlaced?.sandboxId ?? "?"} (not reused: nothing to carry)`;
  const firstCpu = afterFirst.cpuMs - before.cpuMs;
  const firstPeak = afterFirst.memoryPeak - before.memoryPeak;
  const pass = cpuMs < (BURN_SECONDS * 1000) / 2 && peak < HOLD_BYTES;
  return {
    pass,
    evidence: `${where}; the first held ${HOLD_BYTES / MIB} MiB and burned ${BURN_SECONDS} s: recorded ${firstCpu} ms CPU, peak ${Math.round(firstPeak / MIB)} MiB; the idle next session: ${cpuMs} ms CPU, peak ${Math.round(peak / MIB)} MiB`,
  };
}

export const usageChecks: CheckProbe[] = [
  {
    kind: "check",
    name: "usage.next-session-figures",
    claim: "a reused sandbox's next session is billed its own CPU and memory peak, not the earlier session's",
    async run(context) {
      const admin = context.admin;
      if (!admin) throw new Error("needs --admin-token");
      // What this probe judges is billing, not reachability (resources.fork-bomb and the others
      // judge that): a sandbox that failed under it is tried once more, and the evidence says so.
      return runUsage(context, admin).catch(async (error: Error) => {
        if (!(error instanceof VerifyCallError) || !/answered 5\d\d/.test(error.message)) throw error;
        const again = await runUsage(context, admin);
        return {
          ...again,
          evidence: `${again.evidence} (a first try failed: ${error.message.slice(0, 120)})`,
        };
      });
    },
  },
];
