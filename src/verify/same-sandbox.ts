/**
 * Where a probe's session ran, and a workspace's next session on a given sandbox. With reuse, a
 * workspace may hold several parked sandboxes (earlier runs', its own traffic's), and its next
 * session may take any of them; each session that lands elsewhere is held open (`hold`: to the
 * end of the leak probes), keeping that sandbox out of the way, so later tries, and later
 * cycles, find only the one sought. Needs the admin API (which sandbox a session runs in).
 */
import type { ProbeSession } from "./probe.js";
import type { AdminView } from "./verify-client.js";

export const PLACEMENT_TRIES = 8;

export async function sandboxOf(
  admin: AdminView | undefined,
  session: ProbeSession,
): Promise<string | undefined> {
  if (!admin) return undefined;
  return (await admin.sessionOf(session.id).catch(() => undefined))?.sandboxId;
}

export interface Placement {
  admin: AdminView | undefined;
  /** Opens a session of the workspace; the run ends it. */
  open(): Promise<ProbeSession>;
  /** Keeps a session that landed elsewhere open, holding its sandbox. */
  hold(session: ProbeSession): void;
  /**
   * Tries per search, and whether any search found its sandbox: until one has, a search that
   * fails makes the later ones try once (a deployment that does not reuse spends no session
   * rate on them).
   */
  reuse: { tries: number; seen: boolean };
}

export async function sessionOnSandbox(
  placement: Placement,
  sandbox: string | undefined,
): Promise<ProbeSession> {
  for (let attempt = 1; ; attempt++) {
    const session = await placement.open();
    if (!sandbox || !placement.admin) return session;
    if ((await sandboxOf(placement.admin, session)) === sandbox) {
      placement.reuse.seen = true;
      return session;
    }
    if (attempt >= placement.reuse.tries) {
      if (!placement.reuse.seen) placement.reuse.tries = 1;
      return session;
    }
    placement.hold(session);
  }
}
