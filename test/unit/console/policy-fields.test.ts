/**
 * The console's policy editor (web/console/src/policy-fields.ts) and usage CSV (csv.ts): form
 * text to values with problems per field, the diff an edit makes, the API's problems placed on
 * their fields, where a value in force comes from, and the CSV's rows.
 */
import { describe, expect, it } from "vitest";
import type { PolicyView, UsageReport } from "../../../web/console/src/api.js";
import { usageCsv } from "../../../web/console/src/csv.js";
import { parseField, policyEdit, problemsByField, sourceOf } from "../../../web/console/src/policy-fields.js";

const row = {
  enabled: true,
  allowedImages: ["python:3.12"],
  maxConcurrentSessions: 4,
  execTimeoutCeilingSeconds: null,
} as unknown as NonNullable<PolicyView["row"]>;

describe("the policy editor's fields", () => {
  it("parses each kind of field, empty as the deployment's value", () => {
    expect(parseField("whole", " 12 ")).toEqual({ value: 12 });
    expect(parseField("whole", "")).toEqual({ value: null });
    expect(parseField("whole", "1.5")).toHaveProperty("problem");
    expect(parseField("whole", "-1")).toHaveProperty("problem");
    expect(parseField("flag", "false")).toEqual({ value: false });
    expect(parseField("flag", "")).toHaveProperty("problem");
    expect(parseField("maybe-flag", "")).toEqual({ value: null });
    expect(parseField("list", "a, b,,c ")).toEqual({ value: ["a", "b", "c"] });
    expect(parseField("tools", "code_execution, shell")).toEqual({
      problem: expect.stringContaining("unknown tool shell"),
    });
    expect(parseField("isolation", "gvisor")).toEqual({ value: "gvisor" });
    expect(parseField("isolation", "vm")).toHaveProperty("problem");
  });

  it("sends only what changed, and shows the diff against the row", () => {
    const result = policyEdit(row, {
      enabled: "true",
      allowedImages: "python:3.12",
      maxConcurrentSessions: "2",
      execTimeoutCeilingSeconds: "60",
    });
    expect(result).toEqual({
      edit: { maxConcurrentSessions: 2, execTimeoutCeilingSeconds: 60 },
      changes: [
        { name: "execTimeoutCeilingSeconds", before: "", after: "60" },
        { name: "maxConcurrentSessions", before: "4", after: "2" },
      ],
    });
    // Clearing a value sends null: the deployment's applies again.
    expect(policyEdit(row, { maxConcurrentSessions: "" })).toMatchObject({
      edit: { maxConcurrentSessions: null },
    });
    // Without a row, enabled is true and every other field unset.
    expect(policyEdit(null, { enabled: "true", sessionsPerMinute: "" })).toEqual({ edit: {}, changes: [] });
  });

  it("names the field of each problem found before anything is sent", () => {
    const result = policyEdit(row, { maxConcurrentSessions: "two", enabled: "maybe" });
    expect("problems" in result && [...result.problems.keys()]).toEqual(["enabled", "maxConcurrentSessions"]);
  });

  it("places the API's problems on their fields, and the rest apart", () => {
    const placed = problemsByField([
      "maxConcurrentSessions: above the deployment's ceiling (10)",
      "allowedImages[1]: not offered by any pool",
      "the body must be an object",
    ]);
    expect(placed.get("maxConcurrentSessions")).toEqual([
      "maxConcurrentSessions: above the deployment's ceiling (10)",
    ]);
    expect(placed.get("allowedImages")).toEqual(["allowedImages[1]: not offered by any pool"]);
    expect(placed.get("")).toEqual(["the body must be an object"]);
  });

  it("tells the deployment's value, the workspace's, and the deployment's ceiling over the row apart", () => {
    const view = {
      row: { ...row, maxConcurrentSessions: 50 },
      sources: {
        maxConcurrentSessions: "deployment",
        allowedImages: "workspace",
        sessionsPerMinute: "deployment",
      },
    } as unknown as PolicyView;
    expect(sourceOf(view, "allowedImages")).toBe("workspace");
    expect(sourceOf(view, "maxConcurrentSessions")).toBe("ceiling");
    expect(sourceOf(view, "sessionsPerMinute")).toBe("deployment");
  });
});

describe("the usage CSV", () => {
  it("has a header and a row per day, quoted where needed", () => {
    const bucket = {
      start: "2026-12-05T00:00:00.000Z",
      sessions: 3,
      execCalls: 10,
      execSeconds: 1.5,
      sandboxSeconds: 20,
      cpuSeconds: 0.75,
      memoryPeakBytes: 1024,
      filesIn: 1,
      bytesIn: 100,
      filesOut: 0,
      bytesOut: 0,
      denied: 1,
      hibernations: 0,
      checkpointBytes: 0,
    };
    const csv = usageCsv({ workspace: "team,a", buckets: [bucket] } as unknown as UsageReport);
    expect(csv.split("\r\n")).toEqual([
      "workspace,start,sessions,execCalls,execSeconds,sandboxSeconds,cpuSeconds,memoryPeakBytes,filesIn,bytesIn,filesOut,bytesOut,denied,hibernations,checkpointBytes",
      '"team,a",2026-12-05T00:00:00.000Z,3,10,1.5,20,0.75,1024,1,100,0,0,1,0,0',
      "",
    ]);
  });
});
