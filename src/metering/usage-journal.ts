/**
 * The usage journal: a replica's write-ahead log of the usage records it has not yet seen
 * applied in the coordination store's backlog (src/store/coordination/usage-backlog.ts).
 *
 * A call's end, with its usage record, is written behind (redis-call-steps.ts: up to 25 ms,
 * to ride with the workspace's next script), and the answer does not wait for it. A replica
 * killed in that moment took the record with it. So the record is first appended here,
 * synchronously, before the answer is released: one `write(2)` on a file opened O_APPEND. The
 * data is then in the kernel's page cache, which outlives a SIGKILL or an OOM kill of the
 * process (not a crash of the machine: nothing here calls fsync, which would cost the hot
 * path a disk flush per call).
 *
 * Segments rotate every ROTATE_MS; a closed segment is deleted once every record in it was
 * applied (its entry's `applied()`). What is left behind belongs to a replica that died (or
 * whose store was away for long): every replica, at start and every few seconds, claims the
 * segments nobody has written to for `replayAfterMs` (an atomic rename), appends their records
 * to their workspaces' backlogs and deletes them. A record appended twice counts once: its
 * event id is minted before it is journaled, and Postgres keeps one row per id
 * (src/store/sql/usage-repository.ts).
 *
 * The directory must outlive the process (in Kubernetes an emptyDir outlives a container's
 * restart; a volume shared by the replicas of a host lets the others replay at once).
 */
import { randomUUID } from "node:crypto";
import {
  accessSync,
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import type { Logger } from "pino";
import type { UsageBacklog } from "../store/coordination/usage-backlog.js";

/** How often the open segment is closed and a new one begun (at its next record). */
export const ROTATE_MS = 1_000;
/** How often a replica looks for segments left behind. */
export const REPLAY_EVERY_MS = 5_000;
const SEGMENT = ".journal";
const CLAIMED = ".claimed";

/** A record journaled; `applied()` once the backlog holds it (once; later calls do nothing). */
export interface JournalEntry {
  applied(): void;
}

const NOT_JOURNALED: JournalEntry = { applied() {} };

interface Segment {
  path: string;
  fd: number;
  /** Records not yet applied. */
  pending: number;
  closed: boolean;
}

export interface UsageJournalOptions {
  directory: string;
  /** A segment nobody has written to for this long is left behind: replayed by any replica. */
  replayAfterMs: number;
  backlog: Pick<UsageBacklog, "appendUsage">;
  log: Logger;
}

export class UsageJournal {
  private readonly id = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private sequence = 0;
  private current: Segment | undefined;
  private readonly rotating: NodeJS.Timeout;
  private replaying: NodeJS.Timeout | undefined;
  private replay: Promise<number> | undefined;
  private closed = false;

  /** Opens the journal in `directory` (made when missing); throws when it cannot be written. */
  static open(options: UsageJournalOptions): UsageJournal {
    const { directory } = options;
    try {
      mkdirSync(directory, { recursive: true });
      accessSync(directory, constants.R_OK | constants.W_OK);
    } catch (error) {
      throw new Error(
        `usageBacklog.journalDir ${directory} cannot be used for the usage journal: ${(error as Error).message}`,
      );
    }
    return new UsageJournal(options);
  }

  private constructor(private readonly options: UsageJournalOptions) {
    this.rotating = setInterval(() => this.rotate(), ROTATE_MS);
    this.rotating.unref();
  }

  /** Replays what was left behind now and every REPLAY_EVERY_MS. */
  start(): void {
    const next = () => {
      if (this.closed) return;
      this.replaying = setTimeout(() => {
        void this.replayLeftBehind().finally(next);
      }, REPLAY_EVERY_MS);
      this.replaying.unref();
    };
    void this.replayLeftBehind().finally(next);
  }

  /** Appends `workspace`'s `record` (one line) before anything else happens: a SIGKILL after this keeps it. */
  append(workspace: string, record: string): JournalEntry {
    let segment: Segment;
    try {
      segment = this.current ??= this.openSegment();
      writeSync(segment.fd, `${JSON.stringify(workspace)}\t${record}\n`);
    } catch (error) {
      // A full disk must not fail the call: its record goes on as it would without a journal.
      this.options.log.error({ err: error, workspace }, "could not journal a usage record");
      return NOT_JOURNALED;
    }
    segment.pending++;
    let done = false;
    return {
      applied: () => {
        if (done) return;
        done = true;
        segment.pending--;
        if (segment.closed && segment.pending === 0) this.remove(segment.path);
      },
    };
  }

  /**
   * Claims every segment left behind (by a replica gone, or written to last `replayAfterMs`
   * ago), appends its records to the backlog and deletes it; returns the records replayed.
   * A segment whose append fails stays claimed, and is claimable again `replayAfterMs` later.
   */
  replayLeftBehind(now = Date.now()): Promise<number> {
    this.replay ??= this.replayOnce(now).finally(() => {
      this.replay = undefined;
    });
    return this.replay;
  }

  /** Stops rotating and replaying; the open segment is closed (deleted when all of it was applied). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.rotating);
    clearTimeout(this.replaying);
    await this.replay;
    this.rotate();
  }

  private openSegment(): Segment {
    const name = `${this.id}-${String(this.sequence++).padStart(8, "0")}${SEGMENT}`;
    const file = path.join(this.options.directory, name);
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND, 0o600);
    return { path: file, fd, pending: 0, closed: false };
  }

  private rotate(): void {
    const segment = this.current;
    if (!segment) return;
    this.current = undefined;
    segment.closed = true;
    closeSync(segment.fd);
    if (segment.pending === 0) this.remove(segment.path);
  }

  private remove(file: string): void {
    try {
      unlinkSync(file);
    } catch {
      // Replayed (and deleted) by a replica that took it for left behind: its records count once.
    }
  }

  private async replayOnce(now: number): Promise<number> {
    const { directory, replayAfterMs, log } = this.options;
    let names: string[];
    try {
      names = readdirSync(directory);
    } catch (error) {
      log.warn({ err: error, directory }, "could not read the usage journal directory");
      return 0;
    }
    let replayed = 0;
    for (const name of names) {
      if (!name.endsWith(SEGMENT) && !name.endsWith(CLAIMED)) continue;
      const file = path.join(directory, name);
      if (file === this.current?.path) continue;
      const claimed = this.claim(file, now, replayAfterMs);
      if (!claimed) continue;
      try {
        replayed += await this.appendSegment(claimed);
        unlinkSync(claimed);
      } catch (error) {
        log.warn({ err: error, segment: name }, "could not replay a usage journal segment; will retry");
      }
    }
    if (replayed > 0)
      log.info({ records: replayed }, "usage records replayed from journal segments left behind");
    return replayed;
  }

  /** Renames `file` to a claim of this replica's when it was left behind; undefined otherwise. */
  private claim(file: string, now: number, replayAfterMs: number): string | undefined {
    try {
      if (now - statSync(file).mtimeMs < replayAfterMs) return undefined;
      const base = file.endsWith(CLAIMED)
        ? file.slice(0, file.lastIndexOf(".", file.length - CLAIMED.length - 1))
        : file;
      const claimed = `${base}.${this.id}${CLAIMED}`;
      // Atomic: of two replicas claiming one segment, one finds it gone.
      renameSync(file, claimed);
      // A claim left by a replica that died replaying is claimable again later.
      const seconds = Date.now() / 1000;
      utimesSync(claimed, seconds, seconds);
      return claimed;
    } catch {
      return undefined;
    }
  }

  private async appendSegment(file: string): Promise<number> {
    const byWorkspace = new Map<string, string[]>();
    let count = 0;
    for (const line of readFileSync(file, "utf8").split("\n")) {
      const tab = line.indexOf("\t");
      if (tab < 0) continue;
      let workspace: unknown;
      try {
        workspace = JSON.parse(line.slice(0, tab));
        // A line cut short by the crash is no record: the drainer would drop it anyway.
        JSON.parse(line.slice(tab + 1));
      } catch {
        continue;
      }
      if (typeof workspace !== "string") continue;
      const records = byWorkspace.get(workspace);
      if (records) records.push(line.slice(tab + 1));
      else byWorkspace.set(workspace, [line.slice(tab + 1)]);
      count++;
    }
    for (const [workspace, records] of byWorkspace)
      await this.options.backlog.appendUsage(workspace, records);
    return count;
  }
}
