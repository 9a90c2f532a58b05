/**
 * A production deployment for the bench, as the serve tests make one
 * (test/support/serve-deployment.ts): a fresh Postgres database, a fresh Redis key prefix
 * (the deployment name), `sandpool serve` from the built CLI with docker sandboxes, and the
 * clean-up of all of it, containers included. Also starts the bench's light gateway
 * (light-gateway.mjs) on the same kind of deployment.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import { mintToken } from "../../../dist/auth/dev-keys.js";
import { DEFAULT_SOCKET_DIR } from "../../../dist/runtime/docker/docker-runtime-options.js";
import { cliPath } from "./dev-gateway.mjs";
import { spawnTracked, stopProcess, tailOf, waitForLine } from "./process.mjs";
import { removeLabelledContainers } from "./remove-containers.mjs";
import { rssMb } from "./rss.mjs";
import { progress } from "./timing.mjs";

const run = promisify(execFile);
const SECRET = "bench-serve-secret-0123456789-abcdefghij";
const AUDIENCE = "sandpool-bench";
const adminUrl = process.env.SANDPOOL_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const redisUrl = process.env.SANDPOOL_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const LISTENING = /listening on (http:\/\/\S+)/;
const lightGatewayPath = fileURLToPath(new URL("./light-gateway.mjs", import.meta.url));

async function withAdmin(use) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** True when Postgres and Redis answer (the serve phases need both). */
export async function serveBackendsAvailable() {
  try {
    await withAdmin((client) => client.query("select 1"));
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await redis.connect();
    await redis.ping();
    redis.disconnect();
    return true;
  } catch {
    return false;
  }
}

/**
 * The configuration of a deployment whose only work is Execute from `clients` sessions
 * (bench:exec-cpu, bench:exec-ab): a pool that keeps one warm sandbox beyond them, room for
 * their sessions, and no demand-driven sizing to move it.
 */
export function execBenchConfig(clients) {
  return `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: ${clients + 1}
    maxTotal: ${2 * clients + 4}
    coldStartTimeoutMs: 60000
    demand: false
policy:
  maxConcurrentSessions: ${2 * clients + 4}
  sessionsPerMinute: 1000
`;
}

/** node's own flags in the gateway image (deploy/gateway/Dockerfile's ENTRYPOINT): serve as it ships. */
const GATEWAY_NODE_FLAGS = ["--single-threaded-gc"];

/** A fresh deployment configured by `yaml`; `close()` removes all of it. */
export async function createServeDeployment(yaml) {
  const name = `bench${randomBytes(4).toString("hex")}`;
  const database = `sandpool_${name}`;
  await withAdmin((client) => client.query(`create database ${database}`));
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${database}`;
  const configFile = path.join(tmpdir(), `sandpool-${name}.yaml`);
  await writeFile(configFile, yaml);
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl.toString(),
    REDIS_URL: redisUrl,
    SANDPOOL_JWT_SECRET: SECRET,
    SANDPOOL_JWT_AUDIENCE: AUDIENCE,
    SANDPOOL_DEFAULT_IMAGE: "sandpool/sandbox:dev",
    SANDPOOL_DEPLOYMENT: name,
    SANDPOOL_PORT: "0",
    SANDPOOL_LOG_LEVEL: "warn",
    // What the gateway image sets (deploy/gateway/Dockerfile): serve is measured as it ships.
    NODE_OPTIONS: "--max-semi-space-size=4",
  };
  const processes = [];
  const deployment = {
    name,
    async migrate() {
      await run(process.execPath, [cliPath, "migrate"], { env, timeout: 60_000 });
    },
    /**
     * Starts `sandpool serve` (or, with `script`, another gateway program on this deployment),
     * with `nodeFlags` for node itself (e.g. `--cpu-prof`, which NODE_OPTIONS refuses).
     */
    async startGateway(script, extraEnv = {}, nodeFlags = []) {
      const program = script ? [script, "--config", configFile] : [cliPath, "serve", "--config", configFile];
      const args = [...GATEWAY_NODE_FLAGS, ...nodeFlags, ...program];
      const child = spawnTracked(process.execPath, args, { env: { ...env, ...extraEnv } });
      const log = tailOf(child);
      const match = await waitForLine(child, LISTENING, 120_000);
      child.stdout.resume();
      const gateway = {
        url: match[1],
        log,
        pid: child.pid,
        rss: () => rssMb(child.pid),
        stop: async () => {
          const exit = await stopProcess(child, 30_000);
          if (exit.forced) progress(`warning: a gateway of ${name} needed SIGKILL\n${log()}`);
        },
      };
      processes.push(gateway);
      return gateway;
    },
    startServe() {
      return deployment.startGateway(undefined);
    },
    /** The light gateway, whose sandboxes are places on the servers at `sandboxUrls`. */
    startLightGateway(sandboxUrls) {
      return deployment.startGateway(lightGatewayPath, { BENCH_SANDBOX_URLS: sandboxUrls.join(",") });
    },
    token(workspace) {
      return mintToken({ secret: SECRET, audience: AUDIENCE, workspace, ttlSeconds: 3600 });
    },
    adminToken() {
      return mintToken({
        secret: SECRET,
        audience: AUDIENCE,
        admin: true,
        subject: "bench",
        ttlSeconds: 3600,
      });
    },
    async close() {
      await Promise.all(processes.map((p) => p.stop().catch(() => undefined)));
      await removeLabelledContainers(name);
      await rm(path.join(DEFAULT_SOCKET_DIR, name), { recursive: true, force: true });
      await rm(configFile, { force: true });
      const redis = new Redis(redisUrl);
      for (const pattern of [`sandpool:${name}:*`, `{sandpool-jobs}:${name}:*`]) {
        const keys = await redis.keys(pattern);
        if (keys.length > 0) await redis.del(...keys);
      }
      redis.disconnect();
      await withAdmin((client) => client.query(`drop database if exists ${database} with (force)`));
    },
  };
  return deployment;
}
