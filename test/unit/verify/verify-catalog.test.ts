/** `sandpool verify`'s catalog, selection, planting cycles and report, without a deployment. */
import { describe, expect, it } from "vitest";
import { ipcKeyOf } from "../../../src/verify/look-prelude.js";
import type { LeakProbe } from "../../../src/verify/probe.js";
import { ADMIN_PROBES, PROBES } from "../../../src/verify/probe-catalog.js";
import { leakCycles, selectProbes } from "../../../src/verify/run-verify.js";
import { reportJson, reportTable } from "../../../src/verify/verify-report.js";

describe("the probe catalog", () => {
  it("has at least 20 probes with unique names and a claim each", () => {
    expect(PROBES.length).toBeGreaterThanOrEqual(20);
    expect(new Set(PROBES.map((probe) => probe.name)).size).toBe(PROBES.length);
    for (const probe of PROBES) {
      expect(probe.name).toMatch(/^[a-z]+\.[a-z-]+$/);
      expect(probe.claim.length).toBeGreaterThan(20);
    }
  });

  it("covers every class of leftover the issue names", () => {
    const names = PROBES.map((probe) => probe.name);
    for (const expected of [
      "files.workspace",
      "files.tmp",
      "files.dev-shm",
      "processes.zombie-leader-thread",
      "processes.stopped",
      "processes.traced",
      "processes.renamed",
      "ipc.sysv-shm",
      "ipc.posix-mqueue",
      "interpreter.variables",
      "interpreter.modules",
      "interpreter.environment",
      "config.planted-startup",
      "server.socket",
      "network.gateway-and-host",
      "network.docker-socket",
      "resources.cpu-after-return",
      "resources.fork-bomb",
      "usage.next-session-figures",
    ])
      expect(names).toContain(expected);
  });

  it("gives each plant a tag-derived IPC key the look finds again", () => {
    expect(ipcKeyOf("spv0123abcdx12")).toBe(ipcKeyOf("spv0123abcdx12"));
    expect(ipcKeyOf("spv0123abcdx12")).not.toBe(ipcKeyOf("spv0123abcdx13"));
    expect(ipcKeyOf("spv0123abcdx12")).toBeGreaterThan(0);
    expect(ipcKeyOf("spv0123abcdx12")).toBeLessThan(2 ** 31);
  });
});

describe("selectProbes", () => {
  it("takes every probe but the admin ones without an admin token", () => {
    const names = selectProbes(undefined, false).map((probe) => probe.name);
    for (const name of ADMIN_PROBES) expect(names).not.toContain(name);
    expect(selectProbes(undefined, true)).toHaveLength(PROBES.length);
  });

  it("takes only the probes named, and refuses a name that is none", () => {
    expect(selectProbes(["files.tmp", "server.socket"], true).map((p) => p.name)).toEqual([
      "files.tmp",
      "server.socket",
    ]);
    expect(() => selectProbes(["files.tmp", "nope"], true)).toThrow(/no probe named nope/);
  });
});

describe("leakCycles", () => {
  const leaks = PROBES.filter((probe): probe is LeakProbe => probe.kind === "leak");

  it("gives each process probe a cycle of its own, the rest one together, the catch-all to every cycle", () => {
    const cycles = leakCycles(leaks);
    const processes = leaks.filter((probe) => probe.beats);
    expect(cycles).toHaveLength(processes.length + 1);
    const catchAll = leaks.filter((probe) => probe.everyCycle).map((probe) => probe.name);
    expect(catchAll).toEqual(["processes.none-left"]);
    for (const cycle of cycles) expect(cycle.map((probe) => probe.name)).toContain("processes.none-left");
    for (const probe of processes) expect(cycles.filter((cycle) => cycle.includes(probe))).toHaveLength(1);
    // Every probe is planted somewhere.
    expect(new Set(cycles.flat())).toEqual(new Set(leaks));
  });

  it("still looks with a catch-all alone", () => {
    const catchAll = leaks.filter((probe) => probe.everyCycle);
    expect(leakCycles(catchAll)).toEqual([catchAll]);
  });
});

describe("the report", () => {
  const results = [
    { name: "files.tmp", outcome: "pass" as const, evidence: "planted, found nowhere" },
    { name: "server.socket", outcome: "fail" as const, evidence: "/run/sandpool/sandbox.sock answered" },
  ];

  it("prints one probe a line with its evidence, and names the failed ones", () => {
    const table = reportTable(results);
    expect(table).toMatch(/^RESULT\s+PROBE\s+EVIDENCE$/m);
    expect(table).toMatch(/^pass\s+files\.tmp\s+planted, found nowhere$/m);
    expect(table).toMatch(/^FAIL\s+server\.socket\s+\/run\/sandpool\/sandbox\.sock answered$/m);
    expect(table).toMatch(/^1 of 2 probes failed: server\.socket$/m);
    expect(reportTable(results.slice(0, 1))).toMatch(/^all 1 probes passed$/m);
  });

  it("prints the documented JSON", () => {
    expect(JSON.parse(reportJson(results))).toEqual({ probes: results });
  });
});
