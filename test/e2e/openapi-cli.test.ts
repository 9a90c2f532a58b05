/** `sandpool openapi`: the registry's OpenAPI document, printed by the built CLI without a gateway. */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/discovery/openapi-document.js";
import { requireBuiltCli, runCli } from "../support/cli.js";

let dir: string;
beforeAll(async () => {
  requireBuiltCli();
  dir = await mkdtemp(path.join(tmpdir(), "sandpool-openapi-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("sandpool openapi", () => {
  it("prints the public document: the contract and the open endpoints", async () => {
    const result = await runCli(["openapi"]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(openApiDocument("public"));
  });

  it("prints every operation with --admin, into --output", async () => {
    const file = path.join(dir, "admin.json");
    const result = await runCli(["openapi", "--admin", "--output", file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("");
    const document = JSON.parse(await readFile(file, "utf8"));
    expect(document).toEqual(openApiDocument("admin"));
    expect(document.paths["/admin/v1/workspaces/{ws}/policy"]).toBeDefined();
  });

  it("exits 1 naming a file it cannot write", async () => {
    const file = path.join(dir, "no-such-dir", "x.json");
    const result = await runCli(["openapi", "--output", file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot write ${file}`);
  });

  it("exits 2 on an unknown option, and its help says what it prints", async () => {
    const bad = await runCli(["openapi", "--adnim"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--adnim");
    const help = await runCli(["openapi", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--admin");
    expect(help.stdout).toContain("GET /openapi.json");
  });
});
