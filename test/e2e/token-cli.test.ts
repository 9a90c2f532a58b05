import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authConfigSchema } from "../../src/auth/auth-config.js";
import { JwtAuthenticator } from "../../src/auth/jwt-authenticator.js";
import { runCli } from "../support/cli.js";

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), "sandpool-token-"));
});
afterAll(() => rm(dataDir, { recursive: true, force: true }));

async function verify(token: string) {
  const secret = (await readFile(path.join(dataDir, "dev-signing-key"), "utf8")).trim();
  return new JwtAuthenticator(authConfigSchema.parse({ jwtSecret: secret })).authenticate(`Bearer ${token}`);
}

describe("sandpool token", () => {
  it("mints a token for a workspace, signed with the dev key", async () => {
    const result = await runCli(["token", "--workspace", "team-a", "--data-dir", dataDir]);
    expect(result.code).toBe(0);
    expect(await verify(result.stdout.trim())).toMatchObject({ workspace: "team-a", subject: "dev-user" });
  });

  it("mints an admin token", async () => {
    const result = await runCli(["token", "--admin", "--subject", "ops", "--data-dir", dataDir]);
    expect(result.code).toBe(0);
    expect(await verify(result.stdout.trim())).toMatchObject({ admin: true, subject: "ops" });
  });

  it("refuses a bad workspace id, or none, with a clear message", async () => {
    const bad = await runCli(["token", "--workspace", "not ok!", "--data-dir", dataDir]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("is not a valid workspace id");
    const none = await runCli(["token", "--data-dir", dataDir]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("--workspace");
  });

  it("states the --ttl range in --help, and the same range when --ttl is outside it", async () => {
    const help = await runCli(["token", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(
      /--ttl <seconds>\s+lifetime of the token in seconds, 60 or more \(86400 is 24 h\)/,
    );
    expect(help.stdout).toContain("401 auth.expired");
    const short = await runCli(["token", "--workspace", "team-a", "--ttl", "1", "--data-dir", dataDir]);
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain("expected 60 or more, got 1");
  });

  it("prints an object with --json: the token and what it carries", async () => {
    const before = Date.now();
    const result = await runCli([
      "token",
      "--workspace",
      "team-j",
      "--ttl",
      "120",
      "--json",
      "--data-dir",
      dataDir,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout) as {
      token: string;
      workspace: string | null;
      admin: boolean;
      subject: string;
      expiresAt: string;
    };
    expect(answer).toMatchObject({ workspace: "team-j", admin: false, subject: "dev-user" });
    expect(await verify(answer.token)).toMatchObject({ workspace: "team-j" });
    const expires = Date.parse(answer.expiresAt);
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 120_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 120_000);

    const admin = JSON.parse((await runCli(["token", "--admin", "--json", "--data-dir", dataDir])).stdout);
    expect(admin).toMatchObject({ workspace: null, admin: true });
  });

  it("with --json, still refuses with a one-line reason and exit code 1", async () => {
    const bad = await runCli(["token", "--workspace", "not ok!", "--json", "--data-dir", dataDir]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe("");
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toContain("is not a valid workspace id");
  });
});
