/**
 * `sandpool verify`'s run: the leak probes in one pass (leak-phase.ts), then each check probe
 * with sessions of its own; every session it opens is ended at the end, whatever happened.
 * A probe that cannot run (the deployment refused a call it needs) fails with the reason:
 * a claim that cannot be checked is not a claim that holds.
 */
import { randomBytes } from "node:crypto";
import { runLeakPhase } from "./leak-phase.js";
import type { CheckContext, CheckProbe, LeakProbe, Probe, ProbeResult, ProbeSession } from "./probe.js";
import { ADMIN_PROBES, PROBES } from "./probe-catalog.js";
import { PLACEMENT_TRIES, sessionOnSandbox } from "./same-sandbox.js";
import { AdminView, VerifyCallError, VerifyHttp, WorkspaceClient } from "./verify-client.js";

/** The most sessions held open on other sandboxes while the next one is sought (same-sandbox.ts). */
const MAX_HELD = 3;

export interface VerifyOptions {
  url: string;
  token: string;
  otherToken: string;
  adminToken?: string | undefined;
  /** Only the probes with these names (all when absent). */
  only?: readonly string[] | undefined;
  progress?: (line: string) => void;
}

/** The probes a run takes: those named (all by default), less those that need an admin token it lacks. */
export function selectProbes(only: readonly string[] | undefined, admin: boolean): Probe[] {
  if (only) {
    const unknown = only.filter((name) => !PROBES.some((probe) => probe.name === name));
    if (unknown.length > 0) throw new Error(`no probe named ${unknown.join(", ")} (see --list)`);
  }
  return PROBES.filter(
    (probe) => (!only || only.includes(probe.name)) && (admin || !ADMIN_PROBES.has(probe.name)),
  );
}

export async function runVerify(options: VerifyOptions): Promise<ProbeResult[]> {
  const progress = options.progress ?? (() => {});
  const base = options.url.endsWith("/") ? options.url : `${options.url}/`;
  const http = new VerifyHttp(base);
  const one = new WorkspaceClient(http, options.token);
  const other = new WorkspaceClient(http, options.otherToken);
  const admin = options.adminToken ? new AdminView(http, options.adminToken) : undefined;
  const probes = selectProbes(options.only, admin !== undefined);
  await preflight(http, options).catch(async (error: unknown) => {
    await http.close();
    throw error;
  });
  const run = randomBytes(4).toString("hex");
  const tagOf = (probe: Probe) => `spv${run}x${PROBES.indexOf(probe)}`;
  const results: ProbeResult[] = [];
  const opened: ProbeSession[] = [];
  // Sessions that landed on another sandbox than sought, held open to the end of the leak probes.
  const held: ProbeSession[] = [];
  try {
    const create = (client: WorkspaceClient) =>
      client.createSession((seconds) =>
        progress(`the workspace's session rate is spent: waiting ${seconds} s, as the gateway asks`),
      );
    const open = async (client: WorkspaceClient) => {
      const id = await create(client).catch(async (error: unknown) => {
        // The held sessions take a small pool's room (a pool of four: three held, the probe's
        // own, and the other workspace's finds it full): they are let go, not the probe.
        if (!(error instanceof VerifyCallError) || error.status !== 503 || held.length === 0) throw error;
        progress(`the pool is full: ending the ${held.length} session(s) held aside, and trying again`);
        await endAll(held);
        return create(client);
      });
      const session = {
        id,
        client,
      };
      opened.push(session);
      return session;
    };
    const leaks = probes.filter((probe): probe is LeakProbe => probe.kind === "leak");
    const cycles = leakCycles(leaks);
    const placement = {
      admin,
      reuse: { tries: PLACEMENT_TRIES, seen: false },
      hold: (session: ProbeSession) => {
        // A few held sandboxes clear a workspace's parked ones; more would take a small pool's room.
        if (held.length >= MAX_HELD) return;
        opened.splice(opened.indexOf(session), 1);
        held.push(session);
      },
    };
    for (const [index, cycle] of cycles.entries()) {
      progress(`[leak ${index + 1}/${cycles.length}] plant ${cycle.map((p) => p.name).join(", ")}`);
      const found = await runLeakPhase({
        probes: cycle,
        one,
        other,
        admin,
        tagOf,
        open,
        progress,
        placement,
      }).catch((error: Error) =>
        cycle.map(
          (probe): ProbeResult => ({
            name: probe.name,
            outcome: "fail",
            evidence: `could not run: ${error.message}`,
          }),
        ),
      );
      results.push(...found);
      await endAll(opened);
    }
    opened.push(...held.splice(0));
    await endAll(opened);
    const checks = probes.filter((probe): probe is CheckProbe => probe.kind === "check");
    for (const [index, probe] of checks.entries()) {
      progress(`[${index + 1}/${checks.length}] ${probe.name}`);
      const context: CheckContext = {
        http,
        one,
        other,
        admin,
        tag: tagOf(probe),
        session: () => open(one),
        sessionOn: (sandboxId) =>
          sessionOnSandbox(
            { admin, open: () => open(one), hold: () => {}, reuse: { tries: PLACEMENT_TRIES, seen: false } },
            sandboxId,
          ),
      };
      results.push(await runCheck(probe, context));
      await endAll(opened);
    }
  } finally {
    await endAll(opened);
    await endAll(held);
    await http.close();
  }
  // In the catalog's order, whatever order they ran in.
  return mergeCycles(results).sort(
    (a, b) =>
      PROBES.findIndex((probe) => probe.name === a.name) - PROBES.findIndex((probe) => probe.name === b.name),
  );
}

/**
 * Before any probe: the gateway answers, and each token is taken (a workspace token's unknown
 * session is a 404, not a 401; the admin token lists sessions). A run with a wrong URL or
 * token says so once, instead of failing every probe with it.
 */
async function preflight(http: VerifyHttp, options: VerifyOptions): Promise<void> {
  const tokens: [string, string][] = [
    ["--token", options.token],
    ["--other-token", options.otherToken],
  ];
  for (const [flag, token] of tokens) {
    const answer = await http.send("GET", "sessions/spv-preflight", { token }).catch((error: Error) => {
      const cause = (error as Error & { cause?: { code?: string } }).cause?.code ?? error.message;
      throw new VerifyCallError(`cannot reach the gateway at ${options.url}: ${cause}`);
    });
    if (answer.status === 401 || answer.status === 403)
      throw new VerifyCallError(
        `the gateway refuses ${flag} (${answer.status}): ${answer.text.slice(0, 200)}`,
      );
  }
  if (options.adminToken) {
    const answer = await http.send("GET", "admin/v1/sessions", { token: options.adminToken });
    if (answer.status !== 200)
      throw new VerifyCallError(
        `the gateway refuses --admin-token (${answer.status}): ${answer.text.slice(0, 200)}`,
      );
  }
}

async function runCheck(probe: CheckProbe, context: CheckContext): Promise<ProbeResult> {
  try {
    const { pass, evidence } = await probe.run(context);
    return { name: probe.name, outcome: pass ? "pass" : "fail", evidence };
  } catch (error) {
    return { name: probe.name, outcome: "fail", evidence: `could not run: ${(error as Error).message}` };
  }
}

async function endAll(sessions: ProbeSession[]): Promise<void> {
  const ending = sessions.splice(0);
  await Promise.all(ending.map((s) => s.client.deleteSession(s.id).catch(() => undefined)));
}

/**
 * The planting cycles: each probe that leaves a process gets a cycle of its own, so one that
 * makes the scrub give the sandbox up (as it must when it cannot prove it clean) does not keep
 * the others from being tested on a reused sandbox; the rest share one cycle; a catch-all
 * looks in every cycle.
 */
export function leakCycles(leaks: readonly LeakProbe[]): LeakProbe[][] {
  const everyCycle = leaks.filter((probe) => probe.everyCycle);
  const alone = leaks.filter((probe) => probe.beats && !probe.everyCycle);
  const shared = leaks.filter((probe) => !probe.beats && !probe.everyCycle);
  const cycles = [...(shared.length > 0 ? [shared] : []), ...alone.map((probe) => [probe])];
  if (cycles.length === 0 && everyCycle.length > 0) return [everyCycle];
  return cycles.map((cycle) => [...cycle, ...everyCycle]);
}

/** A probe looked at in several cycles: failed if any cycle failed, with every failing cycle's evidence. */
function mergeCycles(results: ProbeResult[]): ProbeResult[] {
  const byName = new Map<string, ProbeResult[]>();
  for (const result of results) byName.set(result.name, [...(byName.get(result.name) ?? []), result]);
  return [...byName.entries()].map(([name, all]) => {
    if (all.length === 1) return all[0]!;
    const failed = all.filter((r) => r.outcome === "fail");
    return failed.length > 0
      ? { name, outcome: "fail", evidence: failed.map((r) => r.evidence).join(" | ") }
      : { name, outcome: "pass", evidence: `found nothing in ${all.length} cycles; ${all[0]!.evidence}` };
  });
}
