/**
 * The server commands' --json, as a supervisor or a script reads them (the built CLI): once
 * ready, `sandpool dev`, `sandpool sandbox` and `sandpool serve` print one JSON line whose
 * URL answers, instead of their text, and keep serving until SIGTERM.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { decodeJwt } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { requireBuiltCli, resolvePython, startCliServer } from "../support/cli.js";
import { freePort } from "../support/dev-cli-gateway.js";
import {
  createServeDeployment,
  type ServeDeployment,
  serveStackAvailable,
} from "../support/serve-deployment.js";

const JSON_LINE = /^(\{.*\})$/;
const scratch: string[] = [];
afterAll(async () => {
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

async function scratchDir(label: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), `sandpool-${label}-`));
  scratch.push(dir);
  return dir;
}

describe("--json on the server commands", () => {
  it("sandpool dev prints its URL, tokens, runtime and pools as one JSON line", async () => {
    requireBuiltCli();
    const dataDir = await scratchDir("dev-json");
    const port = await freePort();
    const server = await startCliServer(
      [
        ...["dev", "--json", "--runtime", "process", "--port", String(port), "--data-dir", dataDir],
        ...["--min-idle", "0", "--python", resolvePython()],
      ],
      JSON_LINE,
      { timeoutMs: 90_000, env: { SANDPOOL_LOG_LEVEL: "warn" } },
    );
    try {
      const ready = JSON.parse(server.url) as Record<string, unknown>;
      expect(ready).toMatchObject({
        mode: "dev",
        url: `http://127.0.0.1:${port}`,
        workspace: "dev",
        runtime: { kind: "process", isolated: false },
        pools: [{ name: "default", warm: 0, minIdle: 0 }],
      });
      expect(server.output().stdout).not.toContain("sandpool dev\n");
      // Both tokens name who holds them, as `sandpool token`'s do: audit shows that, not a token id.
      expect(decodeJwt(ready.token as string)).toMatchObject({ sub: "dev-user", workspace_id: "dev" });
      expect(decodeJwt(ready.adminToken as string)).toMatchObject({ sub: "dev-admin" });
      const created = await fetch(`${ready.url}/sessions`, {
        method: "POST",
        headers: { authorization: `Bearer ${ready.token}` },
      });
      expect(created.status).toBe(201);
      const pools = await fetch(`${ready.adminUrl}/pools`, {
        headers: { authorization: `Bearer ${ready.adminToken}` },
      });
      expect(pools.status).toBe(200);
    } finally {
      expect(await server.stop(20_000)).toBe(0);
    }
  });

  it("sandpool sandbox prints {url}", async () => {
    const root = await scratchDir("sandbox-json");
    const server = await startCliServer(
      ["sandbox", "--json", "--port", "0", "--root", root, "--python", resolvePython()],
      JSON_LINE,
    );
    try {
      const { url } = JSON.parse(server.url) as { url: string };
      expect((await fetch(`${url}/health`)).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});

describe.skipIf(!(await serveStackAvailable()))("--json on sandpool serve", () => {
  let deployment: ServeDeployment | undefined;
  afterAll(() => deployment?.close(), 120_000);

  it("prints {url} once listening", async () => {
    deployment = await createServeDeployment("pools: []\n");
    const server = await startCliServer(["serve", "--json", "--config", deployment.configFile], JSON_LINE, {
      env: deployment.env,
      timeoutMs: 90_000,
    });
    try {
      const { url } = JSON.parse(server.url) as { url: string };
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      await server.stop(30_000);
    }
  });
});
