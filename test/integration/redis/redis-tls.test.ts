/**
 * Redis over TLS, against servers this file starts with a private test CA: one server
 * (`rediss://`) and a Cluster (`redis.tls`, TLS on the cluster bus too, an ACL user of its
 * own and the default user off, so `redis.username` and `redis.password` reach every node). The store runs in a
 * child process of the built CLI's code, given the CA through NODE_EXTRA_CA_CERTS as an
 * operator would; without it the same connection is refused: certificates are verified.
 * (The child runs dist/: `npm run build` first, as `npm test` does.)
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisTarget } from "../../../src/store/coordination/redis/redis-connection.js";
import {
  type RedisClusterHandle,
  redisClusterToolsAvailable,
  startRedisCluster,
} from "../../support/redis-cluster.js";
import { makeTlsFiles, type TlsFiles, tlsServerFlags } from "../../support/redis-tls.js";
import { requireService } from "../../support/require-service.js";
import { waitFor } from "../../support/wait-for.js";

const run = promisify(execFile);
const available =
  (await redisClusterToolsAvailable()) &&
  (await requireService(
    "openssl",
    async () => {
      await run("openssl", ["version"], { timeout: 5_000 });
      return true;
    },
    { start: "apt-get install openssl" },
  ));
const probeScript = fileURLToPath(new URL("../../support/redis-store-probe.mjs", import.meta.url));

/** What the built store, in a child process, makes of `target`. */
async function probe(
  target: RedisTarget,
  trustedCa?: string,
): Promise<{ acquired?: boolean; error?: string }> {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  if (trustedCa) env.NODE_EXTRA_CA_CERTS = trustedCa;
  const { stdout } = await run(process.execPath, [probeScript, JSON.stringify(target)], {
    env,
    timeout: 30_000,
  });
  return JSON.parse(stdout);
}

describe.skipIf(!available)("Redis over TLS", () => {
  let dir: string;
  let tls: TlsFiles;
  let server: ChildProcess | undefined;
  let port: number;
  let cluster: RedisClusterHandle | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "sandpool-redis-tls-"));
    tls = await makeTlsFiles(dir);
    port = await freePort();
    server = spawn(
      "redis-server",
      [...tlsServerFlags(tls, port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      {
        stdio: "ignore",
      },
    );
    await waitFor(
      async () =>
        (await probe({ kind: "standalone", url: `rediss://127.0.0.1:${port}` }, tls.caFile)).acquired ===
        true,
      10_000,
      "the TLS server",
    );
    cluster = await startRedisCluster({ tls, user: { username: "sandpool-app", password: "app-secret" } });
  });
  afterAll(async () => {
    server?.kill("SIGKILL");
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("reaches one server at a rediss:// URL, verifying its certificate", async () => {
    const target: RedisTarget = { kind: "standalone", url: `rediss://127.0.0.1:${port}` };
    expect(await probe(target, tls.caFile)).toEqual({ acquired: true });
    expect((await probe(target)).error).toMatch(
      /cannot reach Redis at rediss:\/\/127\.0\.0\.1:\d+.*certificate/i,
    );
  });

  it("reaches a Cluster with redis.tls, verifying every node's certificate, as its ACL user", async () => {
    expect(cluster!.target.tls).toBe(true);
    expect(await probe(cluster!.target, tls.caFile)).toEqual({ acquired: true });
    const wrongPassword = await probe({ ...cluster!.target, password: "not-it" }, tls.caFile);
    expect(wrongPassword.error).toMatch(/cannot reach Redis at cluster via/);
    expect(wrongPassword.error).not.toMatch(/not-it/);
    // (ioredis does not pass a Cluster node's TLS error on: the message ends "Connection is closed.")
    expect((await probe(cluster!.target)).error).toMatch(
      /cannot reach Redis at cluster via 127\.0\.0\.1.*\(TLS\)/,
    );
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const listener = createServer();
    listener.once("error", reject);
    listener.listen(0, "127.0.0.1", () => {
      const address = listener.address();
      listener.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}
