/**
 * What a probe of `sandpool verify` is. Two kinds:
 *
 * - a leak probe plants something in a session (a file, a process, an IPC object, a setting)
 *   and then looks for it from the workspace's next session (which reuse puts on the same
 *   sandbox) and from a session of the other workspace: anything it finds there is a leak;
 * - a check probe tries one attack on its own (the server's socket, the network, a fork bomb,
 *   another tenant's session id, an unsigned token) and says whether the deployment held.
 *
 * The code a probe runs in a sandbox prints one JSON line last; `runJson` reads it.
 */
import type { AdminView, VerifyHttp, WorkspaceClient } from "./verify-client.js";

export type ProbeOutcome = "pass" | "fail";

export interface ProbeResult {
  name: string;
  outcome: ProbeOutcome;
  evidence: string;
}

/** A session the probe runs code in. */
export interface ProbeSession {
  id: string;
  client: WorkspaceClient;
}

export interface LeakProbe {
  kind: "leak";
  name: string;
  /** What passing means, for the docs and the report. */
  claim: string;
  /**
   * Python run in the planting session; `tag` is unique to this probe and this run (an
   * identifier). "early" plants run each in a call of its own; "last" ones together in the
   * session's final call, so nothing but the scrub stands between them and the next session.
   */
  plant: { stage: "early" | "last"; code: (tag: string) => string };
  /**
   * A Python expression over the look prelude's helpers (look-prelude.ts) whose value is the
   * list of what of the plant is found. "first" looks run in the looking session's first
   * call; "after-tools" ones after a bash call and a fresh Python process have run there.
   */
  look: { stage: "first" | "after-tools"; expression: (tag: string) => string };
  /** The plant writes /tmp/<tag>.beat while it runs: the look clears it and sees if it comes back. */
  beats?: boolean;
  /** Looks in every planting cycle (a catch-all), not in a cycle of its own. */
  everyCycle?: boolean;
}

export interface CheckContext {
  http: VerifyHttp;
  one: WorkspaceClient;
  other: WorkspaceClient;
  admin: AdminView | undefined;
  /** A fresh session of workspace one, ended by the runner after the probe. */
  session(): Promise<ProbeSession>;
  /** A fresh session of workspace one on that sandbox, where the admin API lets the run find one (same-sandbox.ts). */
  sessionOn(sandboxId: string): Promise<ProbeSession>;
  tag: string;
}

export interface CheckProbe {
  kind: "check";
  name: string;
  claim: string;
  run(context: CheckContext): Promise<{ pass: boolean; evidence: string }>;
}

export type Probe = LeakProbe | CheckProbe;

/** Runs Python in the session and parses the JSON of its last line of output. */
export async function runJson<T>(session: ProbeSession, code: string, timeoutSeconds = 60): Promise<T> {
  const output = await session.client.tool(session.id, "code_execution", code, timeoutSeconds);
  const last = output.stdout.trimEnd().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(last) as T;
  } catch {
    throw new Error(
      `the probe's code printed no JSON (exit ${output.returnCode}): ${(output.stderr || output.stdout).slice(-400)}`,
    );
  }
}

/** A Python string literal of `text` (JSON's escapes are Python's). */
export function py(text: string): string {
  return JSON.stringify(text);
}
