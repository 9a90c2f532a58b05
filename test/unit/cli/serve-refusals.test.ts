/**
 * What `sandpool serve` refuses although the configuration is valid: the process runtime
 * however it is chosen, and tokens without an audience check unless that is said outright.
 * The configurations are loaded the way serve loads them (file, then environment).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { noticesForServe, refusedForServe } from "../../../src/cli/serve-refusals.js";
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

  describe("introspection", () => {
    const introspection = {
      SANDPOOL_INTROSPECTION_URL: "https://platform.example/oauth/introspect",
      SANDPOOL_INTROSPECTION_CLIENT_ID: "sandpool",
      SANDPOOL_INTROSPECTION_CLIENT_SECRET: "s3cret",
    };

    it("refuses introspection without an audience or client ids, naming every way out", () => {
      const refused = refusals(introspection);
      expect(refused).toEqual([expect.stringMatching(/^auth\.introspection\.audience is not set/)]);
      for (const name of [
        "SANDPOOL_INTROSPECTION_AUDIENCE",
        "SANDPOOL_INTROSPECTION_ALLOWED_CLIENT_IDS",
        "auth.introspection.anyAudience: true (SANDPOOL_INTROSPECTION_ANY_AUDIENCE)",
      ])
        expect(refused[0]).toContain(name);
    });

    it("accepts an audience, client ids, or the waiver said outright, from the file or the environment", () => {
      expect(refusals({ ...introspection, SANDPOOL_INTROSPECTION_AUDIENCE: "sandpool" })).toEqual([]);
      expect(
        refusals({ ...introspection, SANDPOOL_INTROSPECTION_ALLOWED_CLIENT_IDS: "agent-runner" }),
      ).toEqual([]);
      expect(refusals({ ...introspection, SANDPOOL_INTROSPECTION_ANY_AUDIENCE: "true" })).toEqual([]);
      expect(refusals(introspection, "auth:\n  introspection:\n    audience: sandpool-prod\n")).toEqual([]);
    });

    it("the JWT audience's waiver does not waive introspection's", () => {
      expect(
        refusals({ ...introspection, SANDPOOL_JWT_AUDIENCE: "", SANDPOOL_JWT_ANY_AUDIENCE: "true" }),
      ).toEqual([expect.stringMatching(/^auth\.introspection\.audience is not set/)]);
    });
  });

  it("lists every refusal at once", () => {
    expect(refusals({ SANDPOOL_RUNTIME: "process", SANDPOOL_JWT_AUDIENCE: "" })).toHaveLength(2);
  });

  describe("per role", () => {
    const secret = "s".repeat(32);
    const node = {
      SANDPOOL_ROLE: "node",
      SANDPOOL_NODE_SECRETS: secret,
      SANDPOOL_NODE_ADVERTISE_URL: "http://10.0.0.5:8091",
    };

    it("accepts a node with its advertised URL and a secret, and an edge with a secret", () => {
      expect(refusals(node)).toEqual([]);
      expect(refusals({ SANDPOOL_ROLE: "edge", SANDPOOL_NODE_SECRETS: secret })).toEqual([]);
    });

    it("refuses a node or an edge without secrets, and secrets shorter than 32 bytes", () => {
      expect(refusals({ ...node, SANDPOOL_NODE_SECRETS: "" })).toEqual([
        expect.stringMatching(/^node\.secrets is not set \(SANDPOOL_NODE_SECRETS\)/),
      ]);
      expect(refusals({ SANDPOOL_ROLE: "edge" })).toEqual([
        expect.stringMatching(/^node\.secrets is not set/),
      ]);
      expect(refusals({ ...node, SANDPOOL_NODE_SECRETS: `${secret},short` })).toEqual([
        expect.stringMatching(/^node\.secrets\[1\] is 5 bytes: edge\/node secrets need 32 bytes or more/),
      ]);
    });

    it("refuses a node without node.advertiseUrl", () => {
      expect(refusals({ ...node, SANDPOOL_NODE_ADVERTISE_URL: "" })).toEqual([
        expect.stringMatching(/^node\.advertiseUrl is not set \(SANDPOOL_NODE_ADVERTISE_URL\)/),
      ]);
    });

    it("refuses a node without an engine (the process runtime), naming the role", () => {
      expect(refusals({ ...node, SANDPOOL_RUNTIME: "process" })).toEqual([
        expect.stringMatching(/^role is node but runtime\.kind is process/),
      ]);
    });

    it("does not ask a node for an audience: edges verify bearer tokens", () => {
      expect(refusals({ ...node, SANDPOOL_JWT_AUDIENCE: "" })).toEqual([]);
    });

    it("accepts a node without a token key source or a database, and says when it was given them", () => {
      const bare = { SANDPOOL_DEFAULT_IMAGE: "sandpool/sandbox:dev", ...node };
      const config = loadGatewayConfig({ env: bare });
      expect(config.auth).toBeUndefined();
      expect(refusedForServe(config)).toEqual([]);
      expect(noticesForServe(config)).toEqual([]);
      const given = loadGatewayConfig({
        env: { ...baseEnv, ...node, DATABASE_URL: "postgres://db/sandpool" },
      });
      expect(noticesForServe(given)).toEqual([
        "role is node: not used here, so keep off nodes (a sandbox escape there would find it): the token key source (auth), DATABASE_URL",
      ]);
    });

    it("accepts an edge configured with an engine, and says it is not used", () => {
      const env = {
        ...baseEnv,
        SANDPOOL_ROLE: "edge",
        SANDPOOL_NODE_SECRETS: secret,
        DOCKER_HOST: "unix:///x.sock",
      };
      const config = loadGatewayConfig({ env });
      expect(refusedForServe(config)).toEqual([]);
      expect(noticesForServe(config)).toEqual([
        expect.stringMatching(/^role is edge: the configured Docker engine/),
      ]);
      expect(noticesForServe(loadGatewayConfig({ env: { ...env, DOCKER_HOST: "" } }))).toEqual([]);
    });
  });
});
