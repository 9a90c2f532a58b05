/**
 * A real gateway for tests: the same assembly `sandpool dev` runs (PGlite, memory store,
 * in-process jobs, process runtime with real sandbox servers), on a free loopback port,
 * with an HS256 secret so tests can mint any token they need, good or bad.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { Kysely } from "kysely";
import { type Logger, pino } from "pino";
import { mintToken } from "../../src/auth/dev-keys.js";
import { type GatewayConfigInput, gatewayConfigSchema } from "../../src/config/gateway-config.js";
import { startDevGateway } from "../../src/gateway/start-dev-gateway.js";
import type { RunningGateway } from "../../src/gateway/start-gateway.js";
import { ProcessRuntime } from "../../src/runtime/process/process-runtime.js";
import type { MemoryCoordinationStore } from "../../src/store/coordination/memory-store.js";
import type { Database } from "../../src/store/sql/database-types.js";
import { PgliteDialect } from "../../src/store/sql/pglite-dialect.js";
import { pgliteTemplate } from "../integration/store/pglite-template.js";
import { resolvePython } from "./cli.js";
import { ContractClient } from "./contract-client.js";

export const TEST_SECRET = "test-secret-of-at-least-thirty-two-bytes!!";
export const TEST_IMAGE = "sandpool/sandbox:dev";

/** An admin token of the test gateways (HS256 with TEST_SECRET), valid ten minutes. */
export const testAdminToken = (subject = "ops") =>
  mintToken({ secret: TEST_SECRET, admin: true, subject, ttlSeconds: 600 });

export interface TestGateway {
  gateway: RunningGateway;
  store: MemoryCoordinationStore;
  url: string;
  /** The temporary directory holding every sandbox's files (`<root>/sandboxes/...`); removed on close. */
  root: string;
  /** A contract client holding a fresh token for `workspace`. */
  client(workspace: string): Promise<ContractClient>;
  token(workspace: string, options?: { ttlSeconds?: number }): Promise<string>;
  close(): Promise<void>;
}

/** Any part of the configuration; `auth` defaults to HS256 with TEST_SECRET. */
export type GatewayOverrides = Partial<GatewayConfigInput>;

/** `log`: the gateway's logger (a test that reads what the gateway logs passes its own). */
export async function startTestGateway(
  overrides: GatewayOverrides = {},
  options: { log?: Logger } = {},
): Promise<TestGateway> {
  const root = await mkdtemp(path.join(tmpdir(), "sandpool-gateway-"));
  const log = options.log ?? pino({ level: process.env.SANDPOOL_TEST_LOG ?? "silent" });
  const config = gatewayConfigSchema.parse({
    host: "127.0.0.1",
    port: 0,
    auth: { jwtSecret: TEST_SECRET },
    policy: { allowedImages: [TEST_IMAGE], defaultImage: TEST_IMAGE },
    pools: [{ name: "default", image: TEST_IMAGE, minIdle: 1, maxTotal: 6 }],
    intervals: { warmMs: 100, reapMs: 100 },
    ...overrides,
  });
  const pglite = await PGlite.create({ loadDataDir: await pgliteTemplate() });
  const db = new Kysely<Database>({ dialect: new PgliteDialect(pglite) });
  const runtime = new ProcessRuntime({
    rootDir: path.join(root, "sandboxes"),
    python: resolvePython(),
    execTimeoutCeilingSeconds: config.policy.execTimeoutCeilingSeconds,
    maxFileBytes: config.policy.maxFileBytes,
    log,
  });
  const { gateway, store, close } = await startDevGateway(config, { db, runtime }, log);
  const token = (workspace: string, options: { ttlSeconds?: number } = {}) =>
    mintToken({ secret: TEST_SECRET, workspace, ttlSeconds: options.ttlSeconds ?? 600 });
  return {
    gateway,
    store,
    url: gateway.url,
    root,
    token,
    client: async (workspace) => new ContractClient(gateway.url, await token(workspace)),
    close: async () => {
      await close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
