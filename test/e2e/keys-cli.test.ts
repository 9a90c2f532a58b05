import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { type DevCliGateway, freePort, startDevCliGateway } from "../support/dev-cli-gateway.js";

let gateway: DevCliGateway | undefined;
let url: string;
let adminToken: string;
let devToken: string;

beforeAll(async () => {
  gateway = await startDevCliGateway("keys");
  ({ url, adminToken, devToken } = gateway);
}, 120_000);

afterAll(() => gateway?.stop(), 30_000);

const hermetic = { SANDPOOL_URL: "", SANDPOOL_ADMIN_TOKEN: "" };

function keys(args: string[], env: NodeJS.ProcessEnv = {}) {
  return runCli(["keys", ...args], { env: { ...hermetic, ...env }, timeoutMs: 30_000 });
}

/** Through the environment, as the README shows. */
function admin(args: string[]) {
  return keys(args, { SANDPOOL_URL: url, SANDPOOL_ADMIN_TOKEN: adminToken });
}

async function contractStatus(key: string): Promise<number> {
  const res = await fetch(`${url}/sessions/no-such-session`, { headers: { authorization: `Bearer ${key}` } });
  await res.text();
  return res.status;
}

describe("sandpool keys", () => {
  it("is listed by sandpool --help with its sub-commands", async () => {
    const top = await runCli(["--help"]);
    expect(top.stdout).toMatch(/^\s+keys\s+create, list and revoke workspace API keys/m);
    const help = await keys(["--help"]);
    expect(help.code).toBe(0);
    for (const command of ["create", "list", "revoke"])
      expect(help.stdout).toMatch(new RegExp(`^\\s+${command}`, "m"));
  });

  it("creates a key printed once, lists it without secret, and revokes it everywhere", async () => {
    const created = await admin(["create", "--workspace", "team-cli", "--name", "ci", "--expires", "30d"]);
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^sp_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(created.stderr).toMatch(/not shown again/);
    const prefix = key.split("_")[1]!;
    expect(await contractStatus(key)).toBe(404); // authenticated; no such session

    const listed = await admin(["list", "--workspace", "team-cli"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^PREFIX\s+NAME\s+WORKSPACE\s+CREATED\s+LAST USED\s+EXPIRES\s+STATUS$/m);
    expect(listed.stdout).toMatch(
      new RegExp(`^${prefix}\\s+ci\\s+team-cli\\s+\\S+\\s+\\S+\\s+\\S+\\s+active$`, "m"),
    );
    expect(listed.stdout).not.toContain(key.split("_").slice(2).join("_"));

    const revoked = await admin(["revoke", prefix]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain(`revoked key ${prefix}`);
    expect(await contractStatus(key)).toBe(401);
    expect((await admin(["list", "--workspace", "team-cli"])).stdout).toMatch(/revoked \S+$/m);
  });

  it("--json prints an object with at least key and prefix, and the list as items", async () => {
    const created = await keys([
      "create",
      "--workspace",
      "team-json",
      "--json",
      "--url",
      url,
      "--token",
      adminToken,
    ]);
    expect(created.code, created.stderr).toBe(0);
    const body = JSON.parse(created.stdout) as { key: string; prefix: string; workspace: string };
    expect(body).toMatchObject({ prefix: expect.stringMatching(/^[0-9a-f]{12}$/), workspace: "team-json" });
    expect(body.key.startsWith(`sp_${body.prefix}_`)).toBe(true);
    const listed = JSON.parse((await admin(["list", "--json"])).stdout) as { items: { prefix: string }[] };
    expect(listed.items.map((item) => item.prefix)).toContain(body.prefix);
    expect(JSON.stringify(listed)).not.toContain(body.key);
  });

  it("usage errors exit 2 with a one-line reason", async () => {
    for (const args of [
      ["create"],
      ["create", "--workspace", "../bad"],
      ["create", "--workspace", "ok", "--expires", "soon"],
      ["revoke", "NOT-A-PREFIX"],
    ]) {
      const answer = await admin(args);
      expect(answer.code, args.join(" ")).toBe(2);
      expect(answer.stderr.length).toBeGreaterThan(0);
    }
    const noToken = await keys(["list", "--url", url]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toMatch(/no admin token/);
  });

  it("refusals exit 1: an unknown prefix, a workspace token (403), an unreachable gateway", async () => {
    const unknown = await admin(["revoke", "0123456789ab"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^sandpool keys: .*404/m);
    const forbidden = await keys(["list", "--url", url, "--token", devToken]);
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/403/);
    const port = await freePort();
    const unreachable = await keys(["list", "--url", `http://127.0.0.1:${port}`, "--token", adminToken]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/cannot reach sandpool/);
  });
});
