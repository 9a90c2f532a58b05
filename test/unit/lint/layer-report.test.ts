import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "layer-report-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A dependency-cruiser JSON output of files importing files. */
function cruise(imports: Record<string, string[]>): string {
  const file = join(dir, `${Object.keys(imports).length}-${Math.random()}.json`);
  const modules = Object.entries(imports).map(([source, targets]) => ({
    source,
    dependencies: targets.map((resolved) => ({ resolved })),
  }));
  writeFileSync(file, JSON.stringify({ modules }));
  return file;
}

function report(file: string, ...extra: string[]) {
  return JSON.parse(
    execFileSync("node", ["scripts/layer-report.mjs", "--from", file, "--json", ...extra], {
      encoding: "utf8",
    }),
  ) as { circles: string[][]; pairs: string[][]; backImports: string[] };
}

describe("scripts/layer-report.mjs", () => {
  it("counts the fewer direction of two folders importing each other as the back-imports", () => {
    const file = cruise({
      "src/a/one.ts": ["src/b/one.ts", "src/b/two.ts"],
      "src/a/two.ts": ["src/b/one.ts"],
      "src/b/one.ts": ["src/a/three.ts"],
      "src/b/two.ts": ["src/c/one.ts", "src/b/one.ts"],
      "src/c/one.ts": [],
    });
    const got = report(file);
    expect(got.pairs).toEqual([["a", "b"]]);
    // Lowest first: a imports b more than b imports a.
    expect(got.circles).toEqual([["b", "a"]]);
    expect(got.backImports).toEqual(["src/b/one.ts -> src/a/three.ts"]);
  });

  it("finds circles through several folders, and the one import that breaks them", () => {
    const file = cruise({
      "src/a/x.ts": ["src/b/x.ts", "src/b/y.ts"],
      "src/b/x.ts": ["src/c/x.ts"],
      "src/b/y.ts": ["src/c/x.ts"],
      "src/c/x.ts": ["src/a/x.ts"],
    });
    const got = report(file);
    expect(got.pairs).toEqual([]);
    expect(got.circles).toHaveLength(1);
    expect(got.backImports).toEqual(["src/c/x.ts -> src/a/x.ts"]);
  });

  it("exits 1 past the ceiling and 0 within it", () => {
    const file = cruise({ "src/a/x.ts": ["src/b/x.ts"], "src/b/x.ts": ["src/a/y.ts"] });
    const run = (max: string) =>
      spawnSync("node", ["scripts/layer-report.mjs", "--from", file, "--summary", "--max", max], {
        encoding: "utf8",
      });
    const over = run("0");
    expect(over.status).toBe(1);
    expect(over.stdout).toContain("layers: 1 back-imports (at most 0 allowed), 1 pairs");
    expect(run("1").status).toBe(0);
  });
});
