/**
 * `sandpool secrets` as an operator runs it (the built CLI) against a real gateway in this
 * process: set from a file and from stdin (never argv), list as a table and as JSON, rm; the
 * value printed nowhere; the gateway's refusals as one-line reasons (exit 1) and bad usage
 * (exit 2). Needs `npm run build` first.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { newKeyEntry } from "../../src/secrets/key-ring.js";
import { useAdminCliHarness } from "../support/admin-cli-harness.js";
import { TEST_IMAGE } from "../support/gateway-harness.js";

const cli = useAdminCliHarness(
  [{ name: "default", image: TEST_IMAGE, minIdle: 0, maxTotal: 2 }],
  ["secrets"],
  {
    secrets: { keys: newKeyEntry("cli") },
  },
);
const dir = mkdtempSync(path.join(tmpdir(), "sandpool-secrets-e2e-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("sandpool secrets", () => {
  it("sets from a file and from stdin, lists without values, removes", async () => {
    const fileValue = `ghp_${randomBytes(12).toString("hex")}`;
    const stdinValue = `pypi-${randomBytes(12).toString("hex")}`;
    const file = path.join(dir, "token");
    writeFileSync(file, `${fileValue}\n`);

    const set = await cli.sandpool([
      "set",
      "cli-team",
      "github",
      "--host",
      "api.github.com",
      "--host",
      "*.githubusercontent.com",
      "--header",
      "Authorization",
      "--template",
      "Bearer {{secret}}",
      "--method",
      "get",
      "--value-file",
      file,
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(
      /stored secret github of workspace cli-team, sent to api\.github\.com, \*\.githubusercontent\.com/,
    );
    const piped = await cli.sandpool(
      [
        "set",
        "cli-team",
        "pypi",
        "--host",
        "upload.pypi.org",
        "--basic-auth-user",
        "__token__",
        "--value-stdin",
      ],
      undefined,
      `${stdinValue}\n`,
    );
    expect(piped.code, piped.stderr).toBe(0);
    const replaced = await cli.sandpool(
      [
        "set",
        "cli-team",
        "pypi",
        "--host",
        "upload.pypi.org",
        "--basic-auth-user",
        "__token__",
        "--value-stdin",
      ],
      undefined,
      stdinValue,
    );
    expect(replaced.stdout).toMatch(/^replaced secret pypi/);

    const opened = await cli.harness.gateway.services.secrets.openedSecretsOf("cli-team");
    expect(Object.fromEntries(opened.map((secret) => [secret.name, secret.value]))).toEqual({
      github: fileValue,
      pypi: stdinValue,
    });

    const table = await cli.sandpool(["list", "cli-team"]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^NAME\s+HOSTS\s+PRESENTED AS\s+ONLY\s+UPDATED$/m);
    expect(table.stdout).toMatch(
      /^github\s+api\.github\.com,\*\.githubusercontent\.com\s+Authorization: Bearer \{\{secret\}\}\s+methods GET\s/m,
    );
    expect(table.stdout).toMatch(/^pypi\s+upload\.pypi\.org\s+basic auth \(__token__\)\s+-\s/m);
    const json = await cli.sandpool(["list", "cli-team", "--json"]);
    expect((JSON.parse(json.stdout) as { items: { name: string }[] }).items.map((item) => item.name)).toEqual(
      ["github", "pypi"],
    );

    const removed = await cli.sandpool(["rm", "cli-team", "github"]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/removed secret github of workspace cli-team/);
    const gone = await cli.sandpool(["rm", "cli-team", "github"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/request\.not_found/);

    const printed = [set, piped, replaced, table, json, removed, gone]
      .map((r) => r.stdout + r.stderr)
      .join("\n");
    for (const value of [fileValue, stdinValue]) expect(printed).not.toContain(value);
  });

  it("refuses a value on the command line, a missing host, and an invalid binding", async () => {
    const noValue = await cli.sandpool(["set", "cli-team", "x", "--host", "a.example", "--header", "X-Key"]);
    expect(noValue.code).toBe(2);
    expect(noValue.stderr).toMatch(/--value-file FILE or --value-stdin/);
    const argv = await cli.sandpool([
      "set",
      "cli-team",
      "x",
      "--host",
      "a.example",
      "--header",
      "X-Key",
      "--value",
      "s3cret",
    ]);
    expect(argv.code).toBe(2);
    expect(argv.stderr).toMatch(/unknown option '--value'/);
    const noHost = await cli.sandpool(
      ["set", "cli-team", "x", "--header", "X-Key", "--value-stdin"],
      undefined,
      "v",
    );
    expect(noHost.code).toBe(2);
    const invalid = await cli.sandpool(
      ["set", "cli-team", "x", "--host", "a.example", "--header", "Host", "--value-stdin"],
      undefined,
      "v",
    );
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/header: 'Host' is written by the proxy/);
  });
});
