/**
 * The usage journal (src/metering/usage-journal.ts) on the file system, over the memory
 * store's backlog: a record is on disk before `append` returns, a segment goes once all of it
 * was applied, and what a replica left behind (killed with SIGKILL: a real child process) is
 * replayed into the backlog by another, once, and only once nobody has written to it for a while.
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Logger } from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BufferedUsageSink } from "../../../src/metering/buffered-usage-sink.js";
import { DurableUsageSink } from "../../../src/metering/durable-usage-sink.js";
import { UsageJournal } from "../../../src/metering/usage-journal.js";
import { usageRecord } from "../../../src/metering/usage-record.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";

const logger = { error: vi.fn(), warn: vi.fn(), info: vi.fn(), debug: vi.fn() } as unknown as Logger;
const root = fileURLToPath(new URL("../../../", import.meta.url));
const REPLAY_AFTER_MS = 60_000;

const record = (eventId: string) =>
  usageRecord(
    { workspace: "ws", sessionId: "s-1", kind: "exec", tool: "code_execution", quantity: 5, eventId },
    1,
  );

describe("UsageJournal", () => {
  let directory: string;
  let store: MemoryCoordinationStore;
  const journals: UsageJournal[] = [];
  const open = () => {
    const journal = UsageJournal.open({
      directory,
      replayAfterMs: REPLAY_AFTER_MS,
      backlog: store,
      log: logger,
    });
    journals.push(journal);
    return journal;
  };
  /** What the workspace's backlog holds, as a drainer would claim it. */
  const backlogOf = async (workspace: string) => {
    const claimed = await store.claimUsage(workspace, {
      token: "t",
      max: 1_000,
      now: Date.now(),
      claimMs: 1_000,
    });
    return claimed.outcome === "claimed" ? claimed.records : ["(busy)"];
  };

  beforeEach(() => {
    directory = mkdtempSync(path.join(tmpdir(), "sandpool-journal-"));
    store = new MemoryCoordinationStore();
  });
  afterEach(async () => {
    for (const journal of journals.splice(0)) await journal.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("has the record on disk when append returns, and drops the segment once all of it was applied", async () => {
    const journal = open();
    const entry = journal.append("ws", record("e-1"));
    const [segment] = readdirSync(directory);
    expect(readFileSync(path.join(directory, segment!), "utf8")).toBe(`"ws"\t${record("e-1")}\n`);
    entry.applied();
    entry.applied();
    await journal.close();
    expect(readdirSync(directory)).toEqual([]);
  });

  it("keeps a closed segment while a record in it waits, and replays nothing written to lately", async () => {
    const journal = open();
    journal.append("ws", record("e-1"));
    await journal.close();
    expect(readdirSync(directory)).toHaveLength(1);
    expect(await open().replayLeftBehind()).toBe(0);
    expect(await backlogOf("ws")).toEqual([]);
  });

  it("replays a segment left behind into its workspaces' backlogs once, skipping a line cut short", async () => {
    const left = open();
    left.append("ws", record("e-1"));
    left.append("other", record("e-2"));
    await left.close();
    const [segment] = readdirSync(directory);
    writeFileSync(
      path.join(directory, segment!),
      `${readFileSync(path.join(directory, segment!), "utf8")}"ws"\t{"eventId":"e-3`,
    );
    // Nobody has written to it for longer than replayAfterMs.
    const old = (Date.now() - 2 * REPLAY_AFTER_MS) / 1000;
    utimesSync(path.join(directory, segment!), old, old);
    const [one, two] = [open(), open()];
    // Two replicas at once: the claim (a rename) lets one of them have it.
    const replayed = await Promise.all([one.replayLeftBehind(), two.replayLeftBehind()]);
    expect(replayed.sort()).toEqual([0, 2]);
    expect(await backlogOf("ws")).toEqual([record("e-1")]);
    expect(await backlogOf("other")).toEqual([record("e-2")]);
    expect(readdirSync(directory)).toEqual([]);
  });

  it("leaves a segment claimed when the backlog cannot take it, and replays it later", async () => {
    const left = open();
    left.append("ws", record("e-1"));
    await left.close();
    const failing = UsageJournal.open({
      directory,
      replayAfterMs: REPLAY_AFTER_MS,
      backlog: { appendUsage: () => Promise.reject(new Error("store away")) },
      log: logger,
    });
    journals.push(failing);
    expect(await failing.replayLeftBehind(Date.now() + 2 * REPLAY_AFTER_MS)).toBe(0);
    const [claimed] = readdirSync(directory);
    expect(claimed).toMatch(/\.claimed$/);
    // Claimed just now: not yet anyone else's.
    expect(await open().replayLeftBehind(Date.now())).toBe(0);
    const old = (Date.now() - 2 * REPLAY_AFTER_MS) / 1000;
    utimesSync(path.join(directory, claimed!), old, old);
    expect(await open().replayLeftBehind()).toBe(1);
    expect(await backlogOf("ws")).toEqual([record("e-1")]);
  });

  it("keeps what the usage sink records journaled until the backlog has it", async () => {
    const journal = open();
    let away = true;
    const backlog = {
      appendUsage: (workspace: string, records: readonly string[]) =>
        away ? Promise.reject(new Error("store away")) : store.appendUsage(workspace, records),
      flushCallEnds: async () => {},
    };
    const sink = new DurableUsageSink(
      backlog,
      { drain: async () => ({}) as never },
      new BufferedUsageSink({ insert: async () => 0 } as never, logger),
      logger,
      Date.now,
      journal,
    );
    sink.record({ workspace: "ws", sessionId: "s-1", kind: "sandbox_cpu", quantity: 7, eventId: "c-1" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await backlogOf("ws")).toEqual([]);
    // The store away: the record is on disk, for another replica to replay if this one dies.
    await journal.close();
    expect(readdirSync(directory)).toHaveLength(1);
    away = false;
    await sink.close();
    expect(await backlogOf("ws")).toHaveLength(1);
    expect(readdirSync(directory)).toEqual([]);
  });

  it("refuses a directory it cannot write, naming the setting", () => {
    const file = path.join(directory, "a-file");
    writeFileSync(file, "");
    expect(() =>
      UsageJournal.open({
        directory: path.join(file, "journal"),
        replayAfterMs: 1,
        backlog: store,
        log: logger,
      }),
    ).toThrow(/usageBacklog\.journalDir/);
  });

  it.skipIf(!existsSync(path.join(root, "dist/metering/usage-journal.js")))(
    "keeps what a process killed with SIGKILL journaled, for another to replay",
    async () => {
      const module = pathToFileURL(path.join(root, "dist/metering/usage-journal.js")).href;
      const script = `
        const { UsageJournal } = await import(${JSON.stringify(module)});
        const journal = UsageJournal.open({ directory: ${JSON.stringify(directory)}, replayAfterMs: 1,
          backlog: { appendUsage: async () => {} }, log: console });
        for (let i = 0; i < 100; i++) journal.append("ws", JSON.stringify({ eventId: "k-" + i }));
        process.kill(process.pid, "SIGKILL");`;
      const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
      expect(child.signal).toBe("SIGKILL");
      expect(await open().replayLeftBehind(Date.now() + 2 * REPLAY_AFTER_MS)).toBe(100);
      const records = await backlogOf("ws");
      expect(records).toHaveLength(100);
      expect(new Set(records).size).toBe(100);
    },
  );
});
