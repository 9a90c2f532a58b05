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
});
