/**
 * `sandpool serve` refuses to run without an audience check, so the shipped deployments set
 * an audience by default, and the token recipe for compose (docs/deploying.md) signs tokens with it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { refusedForServe } from "../../../src/cli/serve-refusals.js";
import { loadGatewayConfig } from "../../../src/config/load-config.js";
import { environmentOf, mountedAt, service } from "./compose-file.js";
import { readText, readYaml } from "./deploy-files.js";

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-audience-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const serviceUrls = {
  DATABASE_URL: "postgres://sandpool@postgres/sandpool",
  REDIS_URL: "redis://redis:6379",
};
const audienceRefusal = /auth\.audience is not set/;

describe("compose", () => {
  const gateway = service("gateway");
  const load = (env: Record<string, string> = {}) =>
    loadGatewayConfig({
      file: mountedAt(gateway, "/etc/sandpool/sandpool.yaml"),
      env: { ...environmentOf(gateway), ...env },
    });

  it("sets the audience sandpool by default, so serve starts", () => {
    const config = load();
    expect(config.auth?.audience).toBe("sandpool");
    expect(refusedForServe(config).join("\n")).not.toMatch(audienceRefusal);
  });

  it("passes SANDPOOL_JWT_AUDIENCE through, with sandpool as the default", () => {
    expect(environmentOf(gateway).SANDPOOL_JWT_AUDIENCE).toBe("sandpool");
    expect(readText("docker-compose.yml")).toMatch(
      /SANDPOOL_JWT_AUDIENCE: \$\{SANDPOOL_JWT_AUDIENCE:-sandpool\}/,
    );
  });

  it("has a recipe in docs/deploying.md that signs tokens with the gateway's audience", () => {
    const deploying = readText("docs/deploying.md");
    const recipe = /docker compose exec gateway node[\s\S]*?\.sign\(key\)\);'/.exec(deploying)?.[0];
    expect(recipe).toBeDefined();
    expect(recipe).toMatch(/\.setAudience\(process\.env\.SANDPOOL_JWT_AUDIENCE\)/);
    expect(recipe).toMatch(/\.setExpirationTime\(/);
  });
});

describe("helm", () => {
  it("sets an audience in values.config, so serve starts", () => {
    const values = readYaml<{ config: Record<string, unknown> }>("helm/sandpool/values.yaml");
    const file = path.join(dir, "values-config.yaml");
    writeFileSync(file, stringify(values.config));
    const config = loadGatewayConfig({
      file,
      env: { ...serviceUrls, SANDPOOL_JWT_SECRET: "a-test-secret-that-is-at-least-32-bytes-long" },
    });
    expect(config.auth?.audience).toBe("sandpool");
    expect(refusedForServe(config).join("\n")).not.toMatch(audienceRefusal);
  });
});
