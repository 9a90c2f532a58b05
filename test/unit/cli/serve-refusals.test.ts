/**
 * What `sandpool serve` refuses although the configuration is valid: the process runtime
 * however it is chosen, and tokens without an audience check unless that is said outright.
 * The configurations are loaded the way serve loads them (file, then environment).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { refusedForServe } from "../../../src/cli/serve-refusals.js";
import { loadGatewayConfig } from "../../../src/config/load-config.js";

const dir = mkdtempSync(path.join(tmpdir(), "sandpool-serve-refusals-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const baseEnv = {
  SANDPOOL_JWT_SECRET: "a-test-secret-that-is-at-least-32-bytes-long",
  SANDPOOL_DEFAULT_IMAGE: "sandpool/sandbox:dev",
  SANDPOOL_JWT_AUDIENCE: "sandpool",
};

function refusals(env: NodeJS.ProcessEnv, yaml?: string): string[] {
  let file: string | undefined;
  if (yaml !== undefined) {
    file = path.join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, yaml);
  }
  return refusedForServe(loadGatewayConfig({ file, env: { ...baseEnv, ...env } }));
}

describe("refusedForServe", () => {
  it("accepts the docker runtime with an audience", () => {
    expect(refusals({})).toEqual([]);
  });

  it("refuses the process runtime chosen by SANDPOOL_RUNTIME, with the reason", () => {
    const refused = refusals({ SANDPOOL_RUNTIME: "process" });
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatch(/^runtime\.kind is process/);
    expect(refused[0]).toMatch(/runs user code as the gateway's own user, able to read its secrets/);
    expect(refused[0]).toMatch(/dev-mode convenience only/);
  });

  it("refuses the process runtime chosen in the configuration file", () => {
    const refused = refusals({}, "runtime:\n  kind: process\n  python: python3\n");
    expect(refused).toEqual([expect.stringMatching(/^runtime\.kind is process/)]);
  });

  it("refuses a configuration without an audience, naming both ways out", () => {
    const refused = refusals({ SANDPOOL_JWT_AUDIENCE: "" });
    expect(refused).toEqual([expect.stringMatching(/^auth\.audience is not set/)]);
    expect(refused[0]).toMatch(/SANDPOOL_JWT_AUDIENCE/);
    expect(refused[0]).toMatch(/auth\.anyAudience: true \(SANDPOOL_JWT_ANY_AUDIENCE\)/);
  });

  it("accepts no audience when anyAudience says so, from the file or the environment", () => {
    expect(refusals({ SANDPOOL_JWT_AUDIENCE: "", SANDPOOL_JWT_ANY_AUDIENCE: "true" })).toEqual([]);
    expect(refusals({ SANDPOOL_JWT_AUDIENCE: "" }, "auth:\n  anyAudience: true\n")).toEqual([]);
    expect(refusals({ SANDPOOL_JWT_AUDIENCE: "" }, "auth:\n  audience: sandpool-prod\n")).toEqual([]);
  });

  it("lists every refusal at once", () => {
    expect(refusals({ SANDPOOL_RUNTIME: "process", SANDPOOL_JWT_AUDIENCE: "" })).toHaveLength(2);
  });
});
