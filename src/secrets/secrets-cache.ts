/**
 * A workspace's opened secrets, kept for a few seconds: a burst of a sandbox's connections
 * (pip's first dozen, a client's retries) opens them once, not once a connection, and a
 * secret removed or rotated stops being sent within `ttlMs` on every replica, with no
 * invalidation message to lose. Concurrent reads of one workspace share one read; a failed
 * read is not kept (the next connection tries again).
 *
 * The values live only in this process's memory, for that short while; nothing here logs
 * or returns them but to the caller that asked.
 */
import type { OpenedSecret, SecretsReader } from "./workspace-secrets.js";

/** Long enough to absorb a burst, short enough that a removed secret is gone "at once". */
export const SECRETS_CACHE_TTL_MS = 3_000;
/** Workspaces kept at most; the oldest go first. */
const MAX_WORKSPACES = 10_000;

interface Entry {
  at: number;
  secrets: Promise<OpenedSecret[]>;
}

export class SecretsCache implements SecretsReader {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly reader: SecretsReader | undefined,
    private readonly ttlMs = SECRETS_CACHE_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Every secret of the workspace, opened; none when no reader is wired (no secrets store). */
  openedSecretsOf(workspace: string): Promise<OpenedSecret[]> {
    if (!this.reader) return Promise.resolve([]);
    const now = this.now();
    const entry = this.entries.get(workspace);
    if (entry && now - entry.at < this.ttlMs) return entry.secrets;
    const secrets = this.reader.openedSecretsOf(workspace);
    this.entries.delete(workspace);
    this.entries.set(workspace, { at: now, secrets });
    secrets.catch(() => {
      if (this.entries.get(workspace)?.secrets === secrets) this.entries.delete(workspace);
    });
    for (const [oldest, kept] of this.entries) {
      if (this.entries.size <= MAX_WORKSPACES && now - kept.at < this.ttlMs) break;
      this.entries.delete(oldest);
    }
    return secrets;
  }

  /** The workspace's secret names (CreateSession's check of `sandpool.secrets`, explain). */
  async namesOf(workspace: string): Promise<string[]> {
    return (await this.openedSecretsOf(workspace)).map((secret) => secret.name);
  }

  /** Drops what is kept (a secret's edit seen on this replica need not wait out the TTL). */
  forget(workspace?: string): void {
    if (workspace === undefined) this.entries.clear();
    else this.entries.delete(workspace);
  }
}
