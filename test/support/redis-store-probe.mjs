/**
 * Run by tests as a child process: connects the built coordination store to the Redis
 * target given as JSON (argv[2]), takes one slot, and prints {"acquired": true} or
 * {"error": "..."}. A child of its own, so a test can give it an environment the test
 * process cannot change once started (NODE_EXTRA_CA_CERTS, the CAs TLS trusts).
 */
import { RedisCoordinationStore } from "../../dist/store/coordination/redis/redis-store.js";

const target = JSON.parse(process.argv[2]);
let result;
try {
  const store = await RedisCoordinationStore.connect({
    target,
    prefix: `sandpool-probe-${process.pid}:`,
    startupTimeoutMs: 5_000,
  });
  const now = Date.now();
  result = { acquired: await store.acquireSlot("ws-probe", "token", 1, now + 60_000, now) };
  await store.close();
} catch (error) {
  result = { error: error.message };
}
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
