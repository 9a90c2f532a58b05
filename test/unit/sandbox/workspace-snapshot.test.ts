/**
 * The bounded workspace walk behind the output-file listing: it stops at its entry cap,
 * skips hidden entries, `__pycache__` and symlinks, stays cheap on a workspace of a few
 * thousand files, and the comparison reports new and changed files only, newest first.
 */
import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  changedFiles,
  MAX_WALK_DEPTH,
  snapshotWorkspace,
} from "../../../src/sandbox/files/workspace-snapshot.js";

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "sandpool-snapshot-"));
});
afterAll(() => rm(root, { recursive: true, force: true }));

async function workspace(name: string): Promise<string> {
  const dir = path.join(root, name);
  await mkdir(dir);
  return dir;
}

describe("snapshotWorkspace", () => {
  it("sees files in subdirectories, not hidden ones, caches or symlinks", async () => {
    const ws = await workspace("kinds");
    await mkdir(path.join(ws, "a/b"), { recursive: true });
    await mkdir(path.join(ws, ".ipython/profile"), { recursive: true });
    await mkdir(path.join(ws, "__pycache__"));
    await writeFile(path.join(ws, "a/b/deep.txt"), "x");
    await writeFile(path.join(ws, "top.txt"), "x");
    await writeFile(path.join(ws, ".hidden"), "x");
    await writeFile(path.join(ws, ".ipython/profile/h.txt"), "x");
    await writeFile(path.join(ws, "__pycache__/m.pyc"), "x");
    await symlink(path.join(ws, "top.txt"), path.join(ws, "link.txt"));
    expect([...(await snapshotWorkspace(ws)).keys()].sort()).toEqual(["a/b/deep.txt", "top.txt"]);
  });

  it("goes no deeper than its depth cap: a tree hundreds of directories deep costs a call little", async () => {
    const ws = await workspace("deep");
    const levels = (n: number) => Array.from({ length: n }, () => "a").join("/");
    await mkdir(path.join(ws, levels(MAX_WALK_DEPTH)), { recursive: true });
    await writeFile(path.join(ws, levels(MAX_WALK_DEPTH), "at-the-cap.txt"), "x");
    await mkdir(path.join(ws, levels(400)), { recursive: true });
    await writeFile(path.join(ws, levels(400), "too-deep.txt"), "x");
    const seen = [...(await snapshotWorkspace(ws)).keys()];
    expect(seen).toEqual([`${levels(MAX_WALK_DEPTH)}/at-the-cap.txt`]);
  });

  it("stops after its entry cap", async () => {
    const ws = await workspace("capped");
    for (let i = 0; i < 30; i++) await writeFile(path.join(ws, `f${String(i).padStart(2, "0")}`), "x");
    const seen = await snapshotWorkspace(ws, 10);
    expect(seen.size).toBe(10);
    expect([...seen.keys()].sort()[0]).toBe("f00");
  });

  it("walks 5000 files in 50 directories in well under the time of a call", async () => {
    const ws = await workspace("large");
    for (let d = 0; d < 50; d++) {
      await mkdir(path.join(ws, `d${d}`));
      await Promise.all(
        Array.from({ length: 100 }, (_, f) => writeFile(path.join(ws, `d${d}`, `f${f}.txt`), "x")),
      );
    }
    await snapshotWorkspace(ws); // warm the dentry cache, as the call's own files are
    let elapsed = Number.POSITIVE_INFINITY;
    let seen = new Map();
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      seen = await snapshotWorkspace(ws);
      elapsed = Math.min(elapsed, performance.now() - started);
    }
    console.log(`snapshot of ${seen.size} files: ${elapsed.toFixed(1)} ms (best of 3)`);
    expect(seen.size).toBe(5000);
    expect(elapsed).toBeLessThan(1000); // typically ~30-60 ms on a shared 2-core machine
  });
});

describe("changedFiles", () => {
  it("reports new and changed files, newest first, at most the cap, never unchanged ones", async () => {
    const ws = await workspace("diff");
    await writeFile(path.join(ws, "same.txt"), "1");
    await writeFile(path.join(ws, "grows.txt"), "1");
    const before = await snapshotWorkspace(ws);
    await writeFile(path.join(ws, "grows.txt"), "12");
    await writeFile(path.join(ws, "new.txt"), "1");
    await utimes(path.join(ws, "new.txt"), new Date(), new Date(Date.now() + 60_000));
    const after = await snapshotWorkspace(ws);
    expect(changedFiles(before, after).map((b) => b.file_id)).toEqual(["new.txt", "grows.txt"]);
    expect(changedFiles(before, after, 1)).toEqual([
      { type: "code_execution_output", file_id: "new.txt", filename: "new.txt" },
    ]);
  });
});
