import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script, without types
import { fileLengthReport, MAX_LINES, TO_SPLIT } from "../../../scripts/file-length.mjs";

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A repository root whose src/ holds files of the given line counts. */
function repository(files: Record<string, number>): string {
  const root = mkdtempSync(join(tmpdir(), "file-length-"));
  roots.push(root);
  for (const [file, lines] of Object.entries(files)) {
    mkdirSync(join(root, file, ".."), { recursive: true });
    writeFileSync(join(root, file), "x\n".repeat(lines));
  }
  return root;
}

describe("scripts/file-length.mjs", () => {
  it("holds for this repository: every hand-written file of src/ is short enough or on the allow-list", () => {
    expect(fileLengthReport(process.cwd())).toEqual({ tooLong: [], shortNow: [] });
  });

  it("names a hand-written file over the limit, but not generated code", () => {
    const root = repository({
      "src/a/long.ts": MAX_LINES + 1,
      "src/a/short.ts": MAX_LINES,
      "src/cli/generated/client.ts": 5_000,
    });
    expect(fileLengthReport(root)).toEqual({
      tooLong: [{ file: "src/a/long.ts", lines: MAX_LINES + 1 }],
      shortNow: [],
    });
  });

  it("has no file left to split: one that grew past the limit again is reported", () => {
    expect([...TO_SPLIT]).toEqual([]);
    const root = repository({ "src/pool/pool-manager.ts": MAX_LINES + 100 });
    expect(fileLengthReport(root)).toEqual({
      tooLong: [{ file: "src/pool/pool-manager.ts", lines: MAX_LINES + 100 }],
      shortNow: [],
    });
  });
});
