import { mkdirSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ancestorsOf,
  inOwnPidNamespace,
  liveTaskCount,
  type ProcessEntry,
  parseStat,
  readProcessTable,
} from "../../../src/sandbox/tools/process-table.js";
import { pickStrays, StrayReaper } from "../../../src/sandbox/tools/stray-reaper.js";

const entry = (pid: number, ppid: number, state = "S", flags = 0x400000): ProcessEntry => ({
  pid,
  ppid,
  state,
  flags,
});

describe("parseStat", () => {
  it("reads pid, parent, state and flags, whatever the command name holds", () => {
    expect(parseStat("42 (sleep) S 7 42 42 0 -1 4194304 100 0 0 0")).toEqual({
      pid: 42,
      ppid: 7,
      state: "S",
      flags: 4194304,
    });
    expect(parseStat("9 (a) b (c) ) R 1 9 9 0 -1 2097216 0")).toEqual({
      pid: 9,
      ppid: 1,
      state: "R",
      flags: 2097216,
    });
  });

  it("reads the group's thread count (field 20) when the line has it", () => {
    const zombieLeader = "2 (python3) Z 1 2 2 0 0 0 0 0 0 0 9 3 0 0 20 0 2 0 61 0 0";
    expect(parseStat(zombieLeader)).toMatchObject({ pid: 2, state: "Z", threads: 2 });
  });

  it("refuses a line it cannot read", () => {
    expect(parseStat("")).toBeUndefined();
    expect(parseStat("12 no parentheses")).toBeUndefined();
    expect(parseStat("12 (short) S")).toBeUndefined();
  });
});

describe("inOwnPidNamespace", () => {
  it("is false as soon as a kernel thread is visible (the host's namespace)", () => {
    expect(inOwnPidNamespace([entry(1, 0), entry(7, 1)])).toBe(true);
    expect(inOwnPidNamespace([entry(1, 0), entry(2, 0, "S", 0x208040)])).toBe(false);
  });
});

describe("ancestorsOf", () => {
  it("walks the parents up to the root and stops on a loop", () => {
    const table = [entry(1, 0), entry(7, 1), entry(20, 7), entry(30, 20)];
    expect([...ancestorsOf(20, table)].sort((a, b) => a - b)).toEqual([1, 7, 20]);
    expect([...ancestorsOf(5, [entry(5, 6), entry(6, 5)])].sort()).toEqual([5, 6]);
  });
});

describe("pickStrays", () => {
  // 1 tini -> 7 server -> 20 interpreter -> 21 its child; 30 setsid'd orphan under tini; 31 zombie.
  const table = [entry(1, 0), entry(7, 1), entry(20, 7), entry(21, 20), entry(30, 1), entry(31, 1, "Z")];

  it("picks every live process but the server, its ancestors and the kept ones", () => {
    expect(pickStrays(table, 7, [20]).sort((a, b) => a - b)).toEqual([21, 30]);
  });

  it("keeps nothing it was not told to keep", () => {
    expect(pickStrays(table, 7, []).sort((a, b) => a - b)).toEqual([20, 21, 30]);
  });

  it("picks a zombie leader whose threads run on (SYS_exit from its main thread), and only that zombie", () => {
    // 50 left with SYS_exit, one thread still writing; 51 a zombie whose threads all ended.
    const zombies = [
      ...table,
      { ...entry(50, 1, "Z"), liveThreads: 1 },
      { ...entry(51, 1, "Z"), liveThreads: 0 },
    ];
    expect(pickStrays(zombies, 7, [20]).sort((a, b) => a - b)).toEqual([21, 30, 50]);
  });

  it("picks stopped, traced, dead-in-tracing and idle processes alike", () => {
    const states = [...table, entry(60, 1, "T"), entry(61, 60, "t"), entry(62, 1, "D"), entry(63, 1, "I")];
    expect(pickStrays(states, 7, [20]).sort((a, b) => a - b)).toEqual([21, 30, 60, 61, 62, 63]);
  });

  it("keeps the children of kept parents (an interpreter being forked by the zygote), not their children", () => {
    // 40 the zygote under the server, 41 a child it is forking, 42 that child's own child.
    const forking = [...table, entry(40, 7), entry(41, 40), entry(42, 41)];
    expect(pickStrays(forking, 7, [20, 40], [40]).sort((a, b) => a - b)).toEqual([21, 30, 42]);
    expect(pickStrays(forking, 7, [20, 40]).sort((a, b) => a - b)).toEqual([21, 30, 41, 42]);
  });
});

describe("StrayReaper.reap", () => {
  const self = process.pid;
  let proc: string;
  let sent: [number, NodeJS.Signals][];

  /** A /proc of stat files: PID 1, this process under it, and the given others. */
  async function fakeProc(entries: [pid: number, ppid: number, state?: string][]): Promise<void> {
    proc = await mkdtemp(path.join(tmpdir(), "sandpool-proc-"));
    for (const [pid, ppid, state = "S"] of [
      [1, 0] as [number, number],
      [self, 1] as [number, number],
      ...entries,
    ])
      await addProcess(pid, ppid, state);
  }
  async function addProcess(pid: number, ppid: number, state = "S", threads: string[] = []): Promise<void> {
    await mkdir(path.join(proc, String(pid)), { recursive: true });
    await writeFile(path.join(proc, String(pid), "stat"), `${pid} (p) ${state} ${ppid} 1 1 0 -1 4194560 0`);
    // task/<tid>/stat: the leader itself, then each thread in the given state.
    for (const [index, threadState] of [state, ...threads].entries()) {
      const tid = index === 0 ? pid : pid + 1000 + index;
      await mkdir(path.join(proc, String(pid), "task", String(tid)), { recursive: true });
      await writeFile(
        path.join(proc, String(pid), "task", String(tid), "stat"),
        `${tid} (p) ${threadState} ${ppid} 1 1 0 -1 4194560 0`,
      );
    }
  }
  const reaper = (keep: number[], onSignal?: (pid: number, signal: NodeJS.Signals) => void) =>
    new StrayReaper({ protectedPids: () => keep }, pino({ level: "silent" }), proc, (pid, signal) => {
      sent.push([pid, signal]);
      onSignal?.(pid, signal);
    });

  beforeEach(() => {
    sent = [];
  });
  afterEach(async () => {
    await rm(proc, { recursive: true, force: true });
  });

  it("signals nothing when nothing but the server, its ancestors and the kept live", async () => {
    await fakeProc([
      [20, self],
      [31, 1, "Z"],
    ]);
    expect(reaper([20]).reap()).toBe(0);
    expect(sent).toEqual([]);
  });

  it("kills a zombie leader with a live thread (the signal reaches its group) and counts each live thread", async () => {
    await fakeProc([[20, self]]);
    await addProcess(50, 1, "Z", ["S", "R", "Z"]);
    await addProcess(51, 1, "Z", ["Z"]);
    const table = readProcessTable(proc);
    expect(table.find((process) => process.pid === 50)?.liveThreads).toBe(2);
    expect(table.find((process) => process.pid === 51)?.liveThreads).toBe(0);
    expect(liveTaskCount(50, proc)).toBe(2);
    // The cheap look sees pids it does not know, so it looks at their threads.
    expect(reaper([20]).onlyKnownProcesses()).toBe(false);
    expect(reaper([20]).count()).toBe(2);
    expect(readProcessTable(proc).find((process) => process.pid === 51)).toMatchObject({ state: "Z" });
    expect(reaper([20]).reap()).toBe(1);
    expect(sent.filter(([, signal]) => signal === "SIGKILL")).toEqual([[50, "SIGKILL"]]);
  });

  it("kills a zombie leader whose thread count says a thread runs, with no task/ to look at (gVisor)", async () => {
    await fakeProc([]);
    await mkdir(path.join(proc, "60"));
    // gVisor: the zombie leader's stat, no task/ directory; its live thread 61 is not listed.
    await writeFile(
      path.join(proc, "60", "stat"),
      "60 (python3) Z 1 60 60 0 0 0 0 0 0 0 9 3 0 0 20 0 2 0 61 0 0",
    );
    expect(reaper([]).count()).toBe(1);
    expect(reaper([]).reap()).toBe(1);
    expect(sent.filter(([, signal]) => signal === "SIGKILL")).toEqual([[60, "SIGKILL"]]);
  });

  it("freezes everything at once, kills the strays, then continues the spared", async () => {
    // 20 an interpreter, 21 its child, 30..32 a setsid'd fork bomb's processes.
    await fakeProc([
      [20, self],
      [21, 20],
      [30, 1],
      [31, 30],
      [32, 31],
    ]);
    expect(reaper([20]).reap()).toBe(4);
    expect(sent[0]).toEqual([-1, "SIGSTOP"]);
    const killed = sent.filter(([, signal]) => signal === "SIGKILL").map(([pid]) => pid);
    expect(killed.sort((a, b) => a - b)).toEqual([21, 30, 31, 32]);
    const continued = sent.filter(([, signal]) => signal === "SIGCONT").map(([pid]) => pid);
    expect(continued.sort((a, b) => a - b)).toEqual([1, 20]);
    // Nothing is continued before every stray is killed.
    const firstContinue = sent.findIndex(([, signal]) => signal === "SIGCONT");
    expect(sent.slice(firstContinue).every(([, signal]) => signal === "SIGCONT")).toBe(true);
  });

  it("freezes and kills again what escaped the first freeze", async () => {
    await fakeProc([[30, 1]]);
    // Killing 30 reveals 40, a child the first freeze missed (the safety net's case).
    const killed = reaper([], (pid, signal) => {
      if (pid !== 30 || signal !== "SIGKILL") return;
      mkdirSync(path.join(proc, "40"));
      writeFileSync(path.join(proc, "40", "stat"), "40 (p) R 30 1 1 0 -1 4194560 0");
    }).reap();
    expect(killed).toBe(2);
    expect(sent).toEqual([
      [-1, "SIGSTOP"],
      [30, "SIGKILL"],
      [-1, "SIGSTOP"],
      [40, "SIGKILL"],
      [1, "SIGCONT"],
    ]);
  });
});
