/**
 * The search of `egress.secret-unseen` finds a value where a leaky deployment would put it (a
 * file in a place programs read, a process's environment), and its own code never holds the
 * value it looks for, so the probe cannot find itself. (Its search is not run here: walking
 * this host's files takes minutes; it runs in a sandbox in serve-secret-injection.test.ts.)
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { secretSearchProgram } from "../../../src/verify/probes/secret-checks.js";

const run = promisify(execFile);

async function search(value: string, env: NodeJS.ProcessEnv = {}) {
  const { stdout } = await run("python3", ["-c", secretSearchProgram(value)], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    maxBuffer: 8 * 1024 * 1024,
  });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as { found: string[]; files: number };
}

describe("the secret-unseen probe's search", () => {
  it("never carries the value it looks for", () => {
    const value = `spv-value-${randomBytes(16).toString("hex")}`;
    expect(secretSearchProgram(value)).not.toContain(value);
  });
});
