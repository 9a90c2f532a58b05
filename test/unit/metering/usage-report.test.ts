import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { buildReport, MAX_USAGE_BUCKETS, reportWindow } from "../../../src/metering/usage-report.js";
import type { UsageAggregateRow } from "../../../src/store/sql/usage-daily-repository.js";

const HOUR = 3_600_000;
const row = (start: string, fields: Partial<UsageAggregateRow>): UsageAggregateRow => ({
  start: new Date(start),
  kind: "exec",
  tool: "",
  image: "",
  events: 1,
  quantity: 0,
  quantityMax: 0,
  ...fields,
});

describe("reportWindow", () => {
  it("rounds since down and until up to whole buckets", () => {
    const { from, to } = reportWindow(
      new Date("2026-03-01T10:30:00Z"),
      new Date("2026-03-02T01:00:00Z"),
      "day",
    );
    expect([from.toISOString(), to.toISOString()]).toEqual([
      "2026-03-01T00:00:00.000Z",
      "2026-03-03T00:00:00.000Z",
    ]);
    const hour = reportWindow(new Date("2026-03-01T10:30:00Z"), new Date("2026-03-01T12:00:00Z"), "hour");
    expect([hour.from.toISOString(), hour.to.toISOString()]).toEqual([
      "2026-03-01T10:00:00.000Z",
      "2026-03-01T12:00:00.000Z",
    ]);
  });

  it("refuses an empty or reversed window and one with too many buckets", () => {
    const t = new Date("2026-03-01T00:00:00Z");
    expect(() => reportWindow(t, t, "day")).toThrow(SandpoolError);
    expect(() => reportWindow(t, new Date(t.getTime() + (MAX_USAGE_BUCKETS + 1) * HOUR), "hour")).toThrow(
      /a report lists 1000 at most/,
    );
    expect(() => reportWindow(t, new Date(t.getTime() + MAX_USAGE_BUCKETS * HOUR), "hour")).not.toThrow();
  });
});

describe("buildReport", () => {
  it("lists every bucket, sums per kind, and breaks exec down by tool and everything by image", () => {
    const from = new Date("2026-03-01T00:00:00Z");
    const report = buildReport("team-a", "day", from, new Date("2026-03-04T00:00:00Z"), [
      row("2026-03-01T00:00:00Z", { kind: "session_created", image: "py", events: 2 }),
      row("2026-03-01T00:00:00Z", { tool: "code_execution", image: "py", events: 3, quantity: 1234 }),
      row("2026-03-01T00:00:00Z", { tool: "bash_code_execution", image: "sh", events: 1, quantity: 100 }),
      row("2026-03-03T00:00:00Z", { kind: "session_ended", image: "py", quantity: 60_000 }),
      row("2026-03-03T00:00:00Z", { kind: "sandbox_cpu", image: "py", quantity: 1500 }),
      row("2026-03-03T00:00:00Z", { kind: "sandbox_memory_peak", quantity: 10, quantityMax: 7 }),
      row("2026-03-03T00:00:00Z", { kind: "sandbox_memory_peak", quantity: 9, quantityMax: 9 }),
      row("2026-03-03T00:00:00Z", { kind: "file_out", events: 2, quantity: 300 }),
      // Outside the window: ignored.
      row("2026-03-05T00:00:00Z", { kind: "session_created", events: 9 }),
    ]);
    expect(report.buckets.map((b) => b.start.slice(0, 10))).toEqual([
      "2026-03-01",
      "2026-03-02",
      "2026-03-03",
    ]);
    const [first, empty, third] = report.buckets;
    expect(first).toMatchObject({ sessions: 2, execCalls: 4, execSeconds: 1.334 });
    expect(first!.byTool).toEqual([
      { tool: "bash_code_execution", execCalls: 1, execSeconds: 0.1 },
      { tool: "code_execution", execCalls: 3, execSeconds: 1.234 },
    ]);
    expect(first!.byImage.map((i) => [i.image, i.sessions, i.execCalls])).toEqual([
      ["py", 2, 3],
      ["sh", 0, 1],
    ]);
    expect(empty).toMatchObject({ sessions: 0, execCalls: 0, byTool: [], byImage: [] });
    expect(third).toMatchObject({
      sandboxSeconds: 60,
      cpuSeconds: 1.5,
      memoryPeakBytes: 9,
      filesOut: 2,
      bytesOut: 300,
    });
    expect(report.totals).toMatchObject({
      sessions: 2,
      execCalls: 4,
      sandboxSeconds: 60,
      memoryPeakBytes: 9,
    });
  });
});
