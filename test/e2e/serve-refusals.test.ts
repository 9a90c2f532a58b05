/**
 * `sandpool serve` refuses, at once and with the reason, what it must never run with: the
 * process runtime (however chosen) and tokens without an audience check. Nothing is
 * contacted: the refusal comes before Postgres, Redis or Docker (their URLs point at a
 * closed loopback port). Needs `npm run build` first.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configEnvVariables } from "../../src/config/config-env.js";
import { requireBuiltCli, runCli } from "../support/cli.js";

beforeAll(() => requireBuiltCli());

let scratch: string;
beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "sandpool-serve-refusals-e2e-"));
});
afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** The test's own configuration variables blanked, then a serve environment that is complete. */
const env: NodeJS.ProcessEnv = {
  ...Object.fromEntries(configEnvVariables.map((variable) => [variable.name, ""])),
  DATABASE_URL: "postgres://sandpool@127.0.0.1:1/sandpool",
  REDIS_URL: "redis://127.0.0.1:1",
  SANDPOOL_JWT_SECRET: "an-e2e-secret-that-is-at-least-32-bytes-long",
  SANDPOOL_JWT_AUDIENCE: "sandpool",
  SANDPOOL_DEFAULT_IMAGE: "sandpool/sandbox:dev",
  SANDPOOL_PORT: "0",
  SANDPOOL_LOG_LEVEL: "warn",
};

async function serve(extraEnv: NodeJS.ProcessEnv, args: string[] = []) {
  const started = Date.now();
  const result = await runCli(["serve", ...args], { env: { ...env, ...extraEnv }, timeoutMs: 30_000 });
  return { ...result, elapsedMs: Date.now() - started };
}

describe("sandpool serve refuses the process runtime", () => {
  it("chosen by SANDPOOL_RUNTIME=process: exits non-zero at once, saying why", async () => {
    const result = await serve({ SANDPOOL_RUNTIME: "process" });
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stderr).toMatch(/runtime\.kind is process/);
    expect(result.stderr).toMatch(/able to read its secrets/);
    expect(result.stdout).not.toMatch(/listening on/);
    // Generous: node start-up alone takes seconds on a loaded machine; a hang would run into the 30 s timeout.
    expect(result.elapsedMs).toBeLessThan(15_000);
  });

  it("chosen in the configuration file", async () => {
    const file = path.join(scratch, "process.yaml");
    await writeFile(file, "runtime:\n  kind: process\n");
    const result = await serve({}, ["--config", file]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/runtime\.kind is process/);
    expect(result.stdout).not.toMatch(/listening on/);
  });
});

describe("sandpool serve refuses tokens without an audience check", () => {
  it("exits non-zero without auth.audience, naming SANDPOOL_JWT_ANY_AUDIENCE", async () => {
    const result = await serve({ SANDPOOL_JWT_AUDIENCE: "" });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/auth\.audience is not set/);
    expect(result.stderr).toMatch(/SANDPOOL_JWT_ANY_AUDIENCE/);
  });

  it("gets past that check with SANDPOOL_JWT_ANY_AUDIENCE=true (then fails on the closed database port)", async () => {
    const result = await serve({ SANDPOOL_JWT_AUDIENCE: "", SANDPOOL_JWT_ANY_AUDIENCE: "true" });
    expect(result.code).not.toBe(0);
    expect(result.stderr).not.toMatch(/auth\.audience is not set/);
  });
});

describe("sandpool serve refuses what it cannot isolate", () => {
  it("a remote engine, whose sandboxes' sockets would be on another machine", async () => {
    const file = path.join(scratch, "remote.yaml");
    await writeFile(
      file,
      "runtime:\n  docker:\n    hosts: [tcp://127.0.0.1:1]\n    allowInsecureTcp: true\n",
    );
    const result = await serve({}, ["--config", file]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/tcp:\/\/127\.0\.0\.1:1 is a remote engine/);
    expect(result.stdout).not.toMatch(/listening on/);
  });

  it("a socket directory it cannot make", async () => {
    const file = path.join(scratch, "socket-dir.yaml");
    const blocker = path.join(scratch, "a-file");
    await writeFile(blocker, "");
    await writeFile(file, `runtime:\n  docker:\n    socketDir: ${blocker}/sockets\n`);
    const result = await serve({}, ["--config", file]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/runtime\.docker\.socketDir .* cannot be made or written/);
  });
});
