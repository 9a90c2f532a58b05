/**
 * The leak probes, all in one pass: one session of workspace one plants everything (the
 * "last" plants in its final call, so only the scrub stands between them and what follows),
 * ends, and then the workspace's next session (on the same sandbox, where the deployment
 * reuses them) and a session of the other workspace each look for every plant.
 */
import { cleanupProgram } from "./cleanup.js";
import { NOT_A_SANDBOX } from "./host-guard.js";
import { LOOK_PRELUDE } from "./look-prelude.js";
import type { LeakProbe, ProbeResult, ProbeSession } from "./probe.js";
import { py, runJson } from "./probe.js";
import { type Placement, sandboxOf, sessionOnSandbox } from "./same-sandbox.js";
import type { AdminView, WorkspaceClient } from "./verify-client.js";

export interface LeakPhaseInput {
  probes: readonly LeakProbe[];
  one: WorkspaceClient;
  other: WorkspaceClient;
  admin: AdminView | undefined;
  tagOf(probe: LeakProbe): string;
  /** Opens a session the run ends whatever happens. */
  open(client: WorkspaceClient): Promise<ProbeSession>;
  progress(line: string): void;
  /** How the next session is sought on the planting sandbox (same-sandbox.ts). */
  placement: Omit<Placement, "open">;
}

/**
 * What the looking session's bash tool and a fresh Python leave for the "after-tools" looks,
 * in files named with the cycle's first tag (so the cleanup removes them too).
 */
const afterToolsCommand = (tag: string) =>
  `env > /tmp/${tag}.shell.env 2>&1; python3 -c 'import matplotlib as m; print(m.rcParams["figure.dpi"])' > /tmp/${tag}.mpl.txt 2>/dev/null; python3 -c pass; true`;

const afterToolsPrelude = (tag: string) => `
SHELL_ENV = _read('/tmp/${tag}.shell.env', True)
def _mpl_dpi():
    found = []
    if _read('/tmp/${tag}.mpl.txt', True).strip() in ('17', '17.0'):
        found.append('a fresh Python reads a planted matplotlibrc (figure.dpi 17)')
    try:
        import matplotlib
        if matplotlib.rcParams.get('figure.dpi') == 17:
            found.append("the session's interpreter has a planted matplotlibrc (figure.dpi 17)")
    except Exception:
        pass
    return found
MATPLOTLIB_DPI = _mpl_dpi()
`;

/** How long the last call waits for its plants to reach their state before the session ends. */
const ARM_SECONDS = 1;

type Findings = Record<string, string[] | { error: string }>;

export async function runLeakPhase(input: LeakPhaseInput): Promise<ProbeResult[]> {
  const { probes, tagOf } = input;
  const planted = await plantAll(input);
  const first = planted.session;
  const where = await sandboxOf(input.admin, first);
  await input.one.deleteSession(first.id);
  input.progress("the planting session ended; looking from the workspace's next session");
  const next = await lookFrom(
    await sessionOnSandbox({ ...input.placement, open: () => input.open(input.one) }, where),
    input,
  );
  const nextWhere = await sandboxOf(input.admin, next.session);
  input.progress("looking from a session of the other workspace");
  const other = await lookFrom(await input.open(input.other), input);
  // Both looks done: what either found is removed, from where it was found.
  const tags = probes.map(tagOf);
  for (const look of [next, other]) {
    await cleanUp(look.session, tags);
    await look.session.client.deleteSession(look.session.id);
  }
  const sameSandbox =
    where && nextWhere
      ? where === nextWhere
        ? `the next session ran on the same sandbox (${where})`
        : `the next session ran on another sandbox (${nextWhere}, not ${where}): reuse was not tested`
      : "which sandbox the next session ran on is unknown (pass --admin-token to check)";
  return probes.map((probe) => {
    const error = planted.errors[probe.name];
    const fromNext = next.findings[probe.name] ?? [];
    const fromOther = other.findings[probe.name] ?? [];
    const leaks = [...describe("the next session", fromNext), ...describe("the other workspace", fromOther)];
    if (leaks.length > 0)
      return { name: probe.name, outcome: "fail", evidence: `${leaks.join("; ")} (${sameSandbox})` };
    if (error?.includes(NOT_A_SANDBOX)) return { name: probe.name, outcome: "fail", evidence: NOT_A_SANDBOX };
    const what = error ? `nothing could be planted (${error})` : `planted ${tagOf(probe)}, found nowhere`;
    return { name: probe.name, outcome: "pass", evidence: `${what}; ${sameSandbox}` };
  });
}

/** Findings shown per look; more are counted, not listed (a host's process table is long). */
const SHOWN_FINDINGS = 8;

function describe(from: string, found: string[] | { error: string }): string[] {
  if (Array.isArray(found)) {
    const shown = found.slice(0, SHOWN_FINDINGS).map((item) => `${from}: ${item}`);
    if (found.length > SHOWN_FINDINGS) shown.push(`${from}: ${found.length - SHOWN_FINDINGS} more`);
    return shown;
  }
  return [`${from}: the look failed (${found.error})`];
}

async function plantAll(
  input: LeakPhaseInput,
): Promise<{ session: ProbeSession; errors: Record<string, string> }> {
  const session = await input.open(input.one);
  const errors: Record<string, string> = {};
  for (const probe of input.probes.filter((p) => p.plant.stage === "early")) {
    input.progress(`planting ${probe.name}`);
    const outcome = await runJson<string | null>(
      session,
      `${guarded(probe.plant.code(input.tagOf(probe)))}\nprint(json.dumps(_error))`,
    ).catch((error: Error) => error.message);
    if (outcome) errors[probe.name] = outcome;
  }
  const last = input.probes.filter((p) => p.plant.stage === "last");
  input.progress(`planting ${last.map((p) => p.name).join(", ")} in the session's last call`);
  const program = last
    .map((probe) => `${guarded(probe.plant.code(input.tagOf(probe)))}\n_errors[${py(probe.name)}] = _error`)
    .join("\n");
  const lastErrors = await runJson<Record<string, string | null>>(
    session,
    // The wait lets each plant reach its state (a leader exits 0.2 s after its thread starts).
    `import json, time\n_errors = {}\n${program}\ntime.sleep(${ARM_SECONDS})\nprint(json.dumps(_errors))`,
  );
  for (const [name, error] of Object.entries(lastErrors)) if (error) errors[name] = error;
  return { session, errors };
}

/** Plant code that records its error in `_error` instead of stopping the call. */
function guarded(code: string): string {
  const body = code
    .trim()
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
  return `import json\n_error = None\ntry:\n${body || "    pass"}\nexcept BaseException as e:\n    _error = '%s: %s' % (type(e).__name__, e)`;
}

async function lookFrom(
  session: ProbeSession,
  input: LeakPhaseInput,
): Promise<{ session: ProbeSession; findings: Findings }> {
  const client = session.client;
  const beatTags = input.probes.filter((p) => p.beats).map(input.tagOf);
  const looks = (stage: "first" | "after-tools") =>
    input.probes
      .filter((p) => p.look.stage === stage)
      .map(
        (probe) =>
          `try:\n    _found[${py(probe.name)}] = list(${probe.look.expression(input.tagOf(probe))})\nexcept Exception as e:\n    _found[${py(probe.name)}] = {'error': '%s: %s' % (type(e).__name__, e)}`,
      )
      .join("\n");
  const firstLooks = await runJson<Findings>(
    session,
    `${LOOK_PRELUDE}\n_found = {}\nclear_beats(json.loads(${py(JSON.stringify(beatTags))}))\ntime.sleep(BEAT_WAIT)\n${looks("first")}\nprint(json.dumps(_found))`,
    120,
  );
  const tags = input.probes.map(input.tagOf);
  await client.tool(session.id, "bash_code_execution", afterToolsCommand(tags[0]!));
  const laterLooks = await runJson<Findings>(
    session,
    `${LOOK_PRELUDE}\n${afterToolsPrelude(tags[0]!)}\n_found = {}\n${looks("after-tools")}\nprint(json.dumps(_found))`,
  );
  return { session, findings: { ...firstLooks, ...laterLooks } };
}

/**
 * Removes, from the looking session itself, what the deployment kept of this cycle's plants
 * and what the looks wrote (cleanup.ts): where a plant leaked, this session sees it. Never
 * fails the run.
 */
async function cleanUp(session: ProbeSession, tags: readonly string[]): Promise<void> {
  await runJson(session, cleanupProgram(tags)).catch(() => undefined);
}
