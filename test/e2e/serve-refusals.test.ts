/**
 * `sandpool serve` refuses, at once and with the reason, what it must never run with: the
 * process runtime (however chosen) and tokens without an audience check (JWTs and introspected
 * ones). Nothing is contacted: the refusal comes before Postgres, Redis or Docker (their URLs
 * point at a closed loopback port). Needs `npm run build` first.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configEnvVariables } from "../../src/config/config-env.js";
import { requireBuiltCli, runCli, startCliServer } from "../support/cli.js";
import { freePort } from "../support/dev-cli-gateway.js";
import { redisAvailable, redisUrl } from "../support/redis.js";
import { dockerAvailable, dockerImageAvailable, requireService } from "../support/require-service.js";

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

describe("sandpool serve refuses introspection without an audience check", () => {
  const introspection = {
    SANDPOOL_INTROSPECTION_URL: "http://127.0.0.1:1/introspect",
    SANDPOOL_INTROSPECTION_CLIENT_ID: "sandpool",
    SANDPOOL_INTROSPECTION_CLIENT_SECRET: "s3cret",
  };

  it("exits non-zero without auth.introspection.audience, naming the waiver", async () => {
    const result = await serve(introspection);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/auth\.introspection\.audience is not set/);
    expect(result.stderr).toMatch(/SANDPOOL_INTROSPECTION_ANY_AUDIENCE/);
    expect(result.stdout).not.toMatch(/listening on/);
  });

  it("gets past that check with an audience, or the waiver said outright (then fails on the closed database port)", async () => {
    for (const extra of [
      { SANDPOOL_INTROSPECTION_AUDIENCE: "sandpool" },
      { SANDPOOL_INTROSPECTION_ANY_AUDIENCE: "true" },
    ]) {
      const result = await serve({ ...introspection, ...extra });
      expect(result.code).not.toBe(0);
      expect(result.stderr).not.toMatch(/introspection\.audience is not set/);
    }
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

describe("sandpool serve --role node needs neither the token keys nor Postgres", () => {
  it("refuses nothing for their absence: no auth section, no DATABASE_URL", async () => {
    // Redis and the engine are closed ports: the node gets past every configuration check.
    const result = await serve({
      SANDPOOL_ROLE: "node",
      SANDPOOL_NODE_SECRETS: "an-e2e-node-secret-of-at-least-32-bytes",
      SANDPOOL_NODE_ADVERTISE_URL: "http://127.0.0.1:1",
      DOCKER_HOST: "unix:///nonexistent/docker.sock",
      DATABASE_URL: "",
      SANDPOOL_JWT_SECRET: "",
      SANDPOOL_JWT_AUDIENCE: "",
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).not.toMatch(/DATABASE_URL|auth|key source|audience/i);
  });
});

// A real start: the node's engine, its probe sandbox and the registry in Redis.
const nodeCanStart =
  (await redisAvailable()) &&
  (await requireService("Docker", dockerAvailable, { start: "bash scripts/start-docker.sh" })) &&
  (await requireService("the sandbox image", () => dockerImageAvailable("sandpool/sandbox:dev"), {
    start: "npm run build:sandbox-image",
  }));

describe.skipIf(!nodeCanStart)(
  "sandpool serve --role node starts with Redis, its engine and the node secret alone",
  () => {
    const METRICS_TOKEN = "an-e2e-metrics-token-of-at-least-32-bytes";

    it("serves the node API without an auth section or DATABASE_URL, its /metrics behind metrics.token", async () => {
      const port = await freePort();
      const node = await startCliServer(["serve", "--role", "node"], undefined, {
        env: {
          ...Object.fromEntries(configEnvVariables.map((variable) => [variable.name, ""])),
          REDIS_URL: redisUrl,
          DOCKER_HOST: process.env.DOCKER_HOST ?? "unix:///var/run/docker.sock",
          SANDPOOL_DEFAULT_IMAGE: "sandpool/sandbox:dev",
          SANDPOOL_MIN_IDLE: "0",
          // Its own namespace in Redis and its own sandboxes' label: nothing else here sees it.
          SANDPOOL_DEPLOYMENT: `e2e-node-${process.pid}`,
          SANDPOOL_NODE_ID: `e2e-node-${process.pid}`,
          SANDPOOL_NODE_SECRETS: "an-e2e-node-secret-of-at-least-32-bytes",
          SANDPOOL_NODE_HOST: "127.0.0.1",
          SANDPOOL_NODE_PORT: String(port),
          SANDPOOL_NODE_ADVERTISE_URL: `http://127.0.0.1:${port}`,
          SANDPOOL_METRICS_TOKEN: METRICS_TOKEN,
          SANDPOOL_LOG_LEVEL: "warn",
        },
        timeoutMs: 90_000,
      });
      try {
        expect(node.url).toBe(`http://127.0.0.1:${port}`);
        expect((await fetch(`${node.url}/readyz`)).status).toBe(200);
        expect(node.output().stderr).not.toMatch(/not used here/);
        // Its /metrics wants the metrics token, as the gateway's does.
        expect((await fetch(`${node.url}/metrics`)).status).toBe(401);
        const wrong = await fetch(`${node.url}/metrics`, { headers: { authorization: "Bearer not-it" } });
        expect(wrong.status).toBe(401);
        const scraped = await fetch(`${node.url}/metrics`, {
          headers: { authorization: `Bearer ${METRICS_TOKEN}` },
        });
        expect(scraped.status).toBe(200);
        expect(await scraped.text()).toContain("sandpool_node_sandboxes");
      } finally {
        await node.stop(30_000);
      }
    }, 120_000);
  },
);
