#!/usr/bin/env node
/**
 * The bench's light gateway: `sandpool serve`'s gateway (Redis store, Postgres, BullMQ, the
 * same startGateway) with the shared-server runtime (shared-server-runtime.mjs) in place of
 * docker, so its memory can be measured holding a thousand leased sessions. Everything but
 * the runtime is what serve builds (src/cli/run-serve.ts); only the bench starts it.
 *
 * Usage: node light-gateway.mjs --config FILE   with serve's environment and
 *        BENCH_SANDBOX_URLS (comma-separated base URLs of the shared sandbox servers).
 * Prints `light gateway listening on URL`; SIGTERM closes it.
 */
import { loadGatewayConfig } from "../../../dist/config/load-config.js";
import { startGateway } from "../../../dist/gateway/start-gateway.js";
import { BullmqJobRunner } from "../../../dist/jobs/bullmq-job-runner.js";
import { createLogger } from "../../../dist/logging/create-logger.js";
import { RedisCoordinationStore } from "../../../dist/store/coordination/redis/redis-store.js";
import { openPostgres } from "../../../dist/store/sql/open-database.js";
import { SharedServerRuntime } from "./shared-server-runtime.mjs";

const config = loadGatewayConfig({
  file: process.argv[process.argv.indexOf("--config") + 1],
  env: process.env,
});
const log = createLogger("sandpool-light");
const runtime = new SharedServerRuntime((process.env.BENCH_SANDBOX_URLS ?? "").split(",").filter(Boolean));
const db = openPostgres(config.databaseUrl);
const store = await RedisCoordinationStore.connect({
  url: config.redisUrl,
  prefix: `sandpool:${config.deployment}:`,
});
const jobs = new BullmqJobRunner({ redisUrl: config.redisUrl, queueName: config.deployment }, log);
const gateway = await startGateway(config, { store, db, runtime, jobs }, log, { ready: () => store.ping() });
process.stdout.write(`light gateway listening on ${gateway.url}\n`);

let closing = false;
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    void (async () => {
      await gateway.close();
      await store.close();
      await db.destroy();
      process.exit(0);
    })();
  });
}
