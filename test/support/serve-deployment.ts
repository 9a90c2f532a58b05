/**
 * A production deployment for tests: a fresh Postgres database, a fresh Redis key prefix
 * (the deployment name), `sandpool serve` processes from the built CLI with docker
 * sandboxes, and the cleanup of all of it, containers included.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { mintToken } from "../../src/auth/dev-keys.js";
import { DEFAULT_SOCKET_DIR } from "../../src/runtime/docker/docker-runtime-options.js";
import {
  openRedis,
  type RedisTarget,
  scanKeys,
} from "../../src/store/coordination/redis/redis-connection.js";
import { RedisCoordinationStore } from "../../src/store/coordination/redis/redis-store.js";
import { postgresAvailable } from "../integration/store/databases.js";
import { type CliServer, runCli, startCliServer } from "./cli.js";
import { ContractClient } from "./contract-client.js";
import { redisAvailable, redisUrl } from "./redis.js";
import { dockerAvailable, dockerImageAvailable, requireService } from "./require-service.js";

const run = promisify(execFile);
export const SERVE_SECRET = "serve-test-secret-0123456789-abcdefghij";
/** serve refuses to start without an audience: tokens of the test deployment carry this one. */
export const SERVE_AUDIENCE = "sandpool-serve-test";
const adminUrl = process.env.SANDPOOL_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

export interface ServeDeployment {
  name: string;
  databaseUrl: string;
  env: NodeJS.ProcessEnv;
  configFile: string;
  /** Starts one more `sandpool serve` replica. */
  startReplica(): Promise<CliServer>;
  client(replica: CliServer, workspace: string): Promise<ContractClient>;
  /** The deployment's Redis state, read as a replica sees it. */
  store(): Promise<RedisCoordinationStore>;
  containers(): Promise<{ id: string; sandboxId: string; running: boolean }[]>;
  close(): Promise<void>;
}

/** The variables that point `sandpool serve` at `target`, as an operator would set them. */
function redisEnvironment(target: RedisTarget): NodeJS.ProcessEnv {
  const list = (nodes: { host: string; port: number }[]) =>
    nodes.map(({ host, port }) => `${host}:${port}`).join(",");
  switch (target.kind) {
    case "standalone":
      return { REDIS_URL: target.url };
    case "cluster":
      return { SANDPOOL_REDIS_CLUSTER_NODES: list(target.nodes), SANDPOOL_REDIS_PASSWORD: target.password };
    case "sentinel":
      return {
        SANDPOOL_REDIS_SENTINELS: list(target.sentinels),
        SANDPOOL_REDIS_SENTINEL_NAME: target.name,
        SANDPOOL_REDIS_SENTINEL_PASSWORD: target.sentinelPassword,
        SANDPOOL_REDIS_PASSWORD: target.password,
      };
  }
}

export interface ServeDeploymentOptions {
  /** The Redis the replicas use: the shared server unless a test brings a Cluster or Sentinel. */
  redis?: RedisTarget;
}

/**
 * Whether what `sandpool serve` needs is here: Postgres, Redis (unless the test brings its
 * own), a Docker engine and the sandbox image. Each missing one is a loud skip, or a failure
 * under CI=true (require-service.ts).
 */
export async function serveStackAvailable(options: { redis?: boolean } = {}): Promise<boolean> {
  return (
    postgresAvailable &&
    (options.redis === false || (await redisAvailable())) &&
    (await requireService("Docker", dockerAvailable, { start: "bash scripts/start-docker.sh" })) &&
    (await requireService("the sandbox image", () => dockerImageAvailable("sandpool/sandbox:dev"), {
      start: "npm run build:sandbox-image",
    }))
  );
}

export async function createServeDeployment(
  yaml = "",
  options: ServeDeploymentOptions = {},
): Promise<ServeDeployment> {
  const redis: RedisTarget = options.redis ?? { kind: "standalone", url: redisUrl };
  const name = `t${randomBytes(5).toString("hex")}`;
  const database = `sandpool_${name}`;
  await withAdmin((client) => client.query(`create database ${database}`));
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${database}`;
  const configFile = path.join(tmpdir(), `sandpool-${name}.yaml`);
  await writeFile(configFile, yaml);
  const env: NodeJS.ProcessEnv = {
    DATABASE_URL: databaseUrl.toString(),
    ...redisEnvironment(redis),
    SANDPOOL_JWT_SECRET: SERVE_SECRET,
    SANDPOOL_JWT_AUDIENCE: SERVE_AUDIENCE,
    SANDPOOL_DEFAULT_IMAGE: "sandpool/sandbox:dev",
    SANDPOOL_DEPLOYMENT: name,
    SANDPOOL_PORT: "0",
    SANDPOOL_LOG_LEVEL: "warn",
  };
  const migrated = await runCli(["migrate"], { env, timeoutMs: 30_000 });
  if (migrated.code !== 0) throw new Error(`sandpool migrate failed: ${migrated.stderr}`);
  const replicas: CliServer[] = [];
  const stores: RedisCoordinationStore[] = [];

  return {
    name,
    databaseUrl: databaseUrl.toString(),
    env,
    configFile,
    async startReplica() {
      const replica = await startCliServer(["serve", "--config", configFile], /listening on (http:\/\/\S+)/, {
        env,
        timeoutMs: 90_000,
      });
      replicas.push(replica);
      return replica;
    },
    async client(replica, workspace) {
      return new ContractClient(
        replica.url,
        await mintToken({ secret: SERVE_SECRET, audience: SERVE_AUDIENCE, workspace }),
      );
    },
    async store() {
      const store = await RedisCoordinationStore.connect({ target: redis, prefix: `sandpool:${name}:` });
      stores.push(store);
      return store;
    },
    async containers() {
      const { stdout } = await run("docker", [
        "ps",
        "-a",
        "--filter",
        `label=sandpool.deployment=${name}`,
        "--format",
        '{{.ID}} {{.Label "sandpool.sandbox"}} {{.State}}',
      ]);
      return stdout
        .split("\n")
        .filter(Boolean)
        .map((line) => {
          const [id, sandboxId, state] = line.split(" ");
          return { id: id!, sandboxId: sandboxId!, running: state === "running" };
        });
    },
    async close() {
      await Promise.all(replicas.map((replica) => replica.stop(30_000).catch(() => undefined)));
      for (const store of stores) await store.close();
      await removeContainers(`label=sandpool.deployment=${name}`);
      await rm(path.join(DEFAULT_SOCKET_DIR, name), { recursive: true, force: true });
      const admin = openRedis(redis, "jobs");
      admin.on("error", () => {});
      await admin.ping(); // connected (a Cluster's nodes are known) before scanning them
      for (const pattern of [`sandpool:${name}:*`, `{sandpool-jobs}:${name}:*`]) {
        // One at a time: on a Cluster the keys are in many slots.
        for (const key of await scanKeys(admin, pattern)) await admin.del(key);
      }
      admin.disconnect();
      await withAdmin((client) => client.query(`drop database if exists ${database} with (force)`));
    },
  };
}

/**
 * Removes every container the filter matches, and waits until none is left: a replica's own
 * destroy may still be under way ("removal ... is already in progress"), which is not an error.
 */
async function removeContainers(filter: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { stdout } = await run("docker", ["ps", "-aq", "--filter", filter]);
    const ids = stdout.split("\n").filter(Boolean);
    if (ids.length === 0) return;
    if (Date.now() > deadline) throw new Error(`containers still there after 30 s: ${ids.join(" ")}`);
    await run("docker", ["rm", "-f", ...ids]).catch((error: { stderr?: string }) => {
      if (!/already in progress|No such container/.test(error.stderr ?? "")) throw error;
    });
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function withAdmin<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
