import { chmod, copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { binaryOnPath } from "../../../src/sandbox/tools/resolve-python.js";

let dir: string;
let shims: string;
let bin: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sandpool-python-path-"));
  shims = path.join(dir, "shims");
  bin = path.join(dir, "bin");
  for (const d of [shims, bin]) await mkdir(d);
  // Any ELF program stands in for Python: the check reads the file's first bytes only.
  await copyFile(process.execPath, path.join(bin, "python3"));
  await chmod(path.join(bin, "python3"), 0o755);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("binaryOnPath", () => {
  it("finds a program on PATH and answers the path as found, a symlink unresolved", async () => {
    expect(binaryOnPath("python3", bin)).toBe(path.join(bin, "python3"));
    await symlink(path.join(bin, "python3"), path.join(shims, "python3"));
    expect(binaryOnPath("python3", `${shims}:${bin}`)).toBe(path.join(shims, "python3"));
  });

  it("leaves a script (a version manager's shim) first on PATH to Python to resolve", async () => {
    await writeFile(path.join(shims, "python3"), '#!/bin/sh\nexec python3 "$@"\n', { mode: 0o755 });
    expect(binaryOnPath("python3", `${shims}:${bin}`)).toBeUndefined();
  });

  it("skips what exec would skip (not executable, a directory) and stops at a relative entry", async () => {
    await writeFile(path.join(shims, "python3"), "not a program", { mode: 0o644 });
    expect(binaryOnPath("python3", `${shims}:${bin}`)).toBe(path.join(bin, "python3"));
    expect(binaryOnPath("bin", dir)).toBeUndefined();
    expect(binaryOnPath("python3", `relative:${bin}`)).toBeUndefined();
    expect(binaryOnPath("python3", `:${bin}`)).toBeUndefined();
  });

  it("does not search for a path or a missing name", () => {
    expect(binaryOnPath(path.join(bin, "python3"), bin)).toBeUndefined();
    expect(binaryOnPath("python-nowhere", bin)).toBeUndefined();
  });
});
