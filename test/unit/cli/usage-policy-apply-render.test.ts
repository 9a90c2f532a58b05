import { describe, expect, it } from "vitest";
import { csv } from "../../../src/cli/admin/admin-render.js";
import { renderApply } from "../../../src/cli/commands/policy-apply-command.js";
import { type UsageReportAnswer, usageCsv } from "../../../src/cli/commands/usage-command.js";

describe("csv", () => {
  it("quotes cells holding a comma, quote or line break, and leaves others bare", () => {
    expect(
      csv(
        ["a", "b"],
        [
          ["x,y", 'say "hi"'],
          ["line\nbreak", null],
        ],
      ),
    ).toBe('a,b\r\n"x,y","say ""hi"""\r\n"line\nbreak",');
  });
});

describe("usageCsv", () => {
  it("prints one row per bucket and dimension, a breakdown's missing columns empty", () => {
    const zero = {
      sessions: 0,
      execCalls: 0,
      execSeconds: 0,
      sandboxSeconds: 0,
      cpuSeconds: 0,
      memoryPeakBytes: 0,
      filesIn: 0,
      bytesIn: 0,
      filesOut: 0,
      bytesOut: 0,
      denied: 0,
      hibernations: 0,
      checkpointBytes: 0,
    };
    const report: UsageReportAnswer = {
      workspace: "w",
      by: "day",
      since: "2026-01-01T00:00:00.000Z",
      until: "2026-01-02T00:00:00.000Z",
      totals: zero,
      buckets: [
        {
          ...zero,
          start: "2026-01-01T00:00:00.000Z",
          execCalls: 2,
          byTool: [{ tool: "code_execution", execCalls: 2, execSeconds: 0.5 }],
          byImage: [{ image: "repo/img:1,x", sessions: 1 }],
        },
      ],
    };
    const lines = usageCsv(report).split("\r\n");
    expect(lines[1]).toBe("2026-01-01T00:00:00.000Z,total,,0,2,0,0,0,0,0,0,0,0,0,0,0");
    expect(lines[2]).toBe("2026-01-01T00:00:00.000Z,tool,code_execution,,2,0.5,,,,,,,,,,");
    expect(lines[3]).toBe('2026-01-01T00:00:00.000Z,image,"repo/img:1,x",1,,,,,,,,,,,,');
    expect(lines[4]).toBe("");
  });
});

describe("renderApply", () => {
  const row = { enabled: true, maxConcurrentSessions: 2, allowedTools: null, version: 1 };
  it("marks each change and sums them up, dry run or applied", () => {
    const answer = {
      dryRun: true,
      changed: true,
      changes: [
        {
          workspace: "a",
          action: "create" as const,
          before: null,
          after: { enabled: true, maxConcurrentSessions: 2 },
        },
        {
          workspace: "b",
          action: "update" as const,
          before: row,
          after: { ...row, maxConcurrentSessions: 3 },
        },
        { workspace: "c", action: "delete" as const, before: row, after: null },
        { workspace: "d", action: "unchanged" as const, before: row, after: row },
      ],
    };
    const dry = renderApply(answer, "p.yaml").split("\n");
    expect(dry).toEqual([
      "+ a: created: maxConcurrentSessions=2",
      "~ b: updated: maxConcurrentSessions 2 -> 3",
      "- c: deleted (deployment defaults apply)",
      "",
      "dry run: 1 to create, 1 to update, 1 to delete, 1 unchanged; nothing was changed (run without --dry-run to apply)",
    ]);
    expect(renderApply({ ...answer, dryRun: false }, "p.yaml")).toMatch(
      /\napplied: 1 created, 1 updated, 1 deleted, 1 unchanged$/,
    );
  });

  it("lists the secrets whose bindings a file replaced, never anything of their values", () => {
    const answer = {
      dryRun: false,
      changed: true,
      changes: [{ workspace: "d", action: "unchanged" as const, before: row, after: row }],
      secrets: [
        { workspace: "d", name: "github", action: "rebind" as const },
        { workspace: "d", name: "pypi", action: "unchanged" as const },
      ],
    };
    expect(renderApply(answer, "p.yaml").split("\n")[0]).toBe(
      "~ d: secret github: binding replaced (value kept)",
    );
  });

  it("says so when nothing changes", () => {
    const answer = {
      dryRun: false,
      changed: false,
      changes: [{ workspace: "d", action: "unchanged" as const, before: row, after: row }],
    };
    expect(renderApply(answer, "p.yaml")).toBe(
      "nothing to change: the policies in force already match p.yaml (1 workspace)",
    );
  });
});
