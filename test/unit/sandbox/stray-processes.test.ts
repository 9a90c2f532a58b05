import { describe, expect, it } from "vitest";
import {
  ancestorsOf,
  inOwnPidNamespace,
  type ProcessEntry,
  parseStat,
} from "../../../src/sandbox/tools/process-table.js";
import { pickStrays } from "../../../src/sandbox/tools/stray-reaper.js";

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
});
