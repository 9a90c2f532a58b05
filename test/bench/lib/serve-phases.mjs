/**
 * The production path: `sandpool serve` with Redis, Postgres and the docker runtime, on a
 * deployment of its own (serve-deployment.mjs). Opens it, measures its leases, and at the
 * end its cold leases (the pool's min_idle set to 0 through the admin API).
 */
import { createClient, createSession, destroySession } from "./client.mjs";
import { readMetrics, waitForRefill } from "./gateway-metrics.mjs";
import { COLD_UNTIMED, measureCold, measureDuringRefill, measureWarm } from "./lease-measures.mjs";
import { onCleanup } from "./process.mjs";
import { createServeDeployment } from "./serve-deployment.mjs";
import { formatMs, nowMs, progress } from "./timing.mjs";

export const SERVE_MIN_IDLE = 4;
const WORKSPACES = 4;
const REST_SETTLE_MS = 3_000;

export async function openServe() {
  const deployment = await createServeDeployment(`
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: ${SERVE_MIN_IDLE}
    maxTotal: 24
    coldStartTimeoutMs: 60000
    # A fixed minimum: the refill and cold phases measure a pool that does not follow demand
    # (with it, the cold phase's leases would keep the pool warm).
    demand: false
policy:
  maxConcurrentSessions: 20
  sessionsPerMinute: 1000
`);
  const unregister = onCleanup(() => deployment.close());
  await deployment.migrate();
  const started = nowMs();
  const gateway = await deployment.startServe();
  progress(`serve (Redis, Postgres, docker) ready in ${formatMs(nowMs() - started)}`);
  const tokens = await Promise.all(
    Array.from({ length: WORKSPACES }, (_, i) => deployment.token(`bench-${i}`)),
  );
  const clients = tokens.map((token) => createClient(gateway.url, token));
  // Its memory once the pool is full and the machine quiet: beside the light gateway's.
  const metrics = createClient(gateway.url);
  await waitForRefill(metrics, SERVE_MIN_IDLE).finally(() => metrics.close());
  await new Promise((resolve) => setTimeout(resolve, REST_SETTLE_MS));
  const restMb = await gateway.rss();
  return {
    restMb,
    deployment,
    gateway,
    tokens,
    clients,
    /** Resolves once the pool is back to its minimum, nothing starting. */
    async refilled() {
      const client = createClient(gateway.url);
      await waitForRefill(client, SERVE_MIN_IDLE).finally(() => client.close());
    },
    async close() {
      await Promise.all(clients.map((client) => client.close()));
      unregister();
      await deployment.close();
    },
  };
}

export async function measureServeLeases(serve, { warmLeases, refillLeases, spacingMs }) {
  const warm = await measureWarm(serve.gateway, serve.clients, {
    rounds: warmLeases,
    burst: 1,
    label: "serve warm",
    minIdle: SERVE_MIN_IDLE,
  });
  const refill = await measureDuringRefill(serve.gateway, serve.clients, {
    leases: refillLeases,
    spacingMs,
    minIdle: SERVE_MIN_IDLE,
    label: "serve warm while refilling",
  });
  return { warm, refill };
}

/** min_idle 0, the warm sandboxes leased away, then creates that each start a container. */
export async function measureServeCold(serve, leases) {
  const admin = createClient(serve.gateway.url, await serve.deployment.adminToken());
  const metrics = createClient(serve.gateway.url);
  const firstSessions = [];
  try {
    const patched = await admin.send("PATCH", "/admin/v1/pools/default", { minIdle: 0 });
    if (patched.status !== 200)
      throw new Error(`PATCH pools/default answered ${patched.status}: ${patched.text}`);
    const held = [];
    for (let i = 0; i < 40; i++) {
      const m = await readMetrics(metrics);
      if (m.idle === 0 && m.starting === 0) break;
      if (m.idle > 0) held.push(await createSession(serve.clients[0]));
      else await new Promise((resolve) => setTimeout(resolve, 250));
    }
    for (const sessionId of held) await destroySession(serve.clients[0], sessionId);
    // Each create a workspace's first session: a workspace's next one gets its last sandbox
    // back, scrubbed (docs/session-churn.md), which starts no container.
    const tokens = await Promise.all(
      Array.from({ length: COLD_UNTIMED + leases }, (_, i) => serve.deployment.token(`bench-cold-${i}`)),
    );
    firstSessions.push(...tokens.map((token) => createClient(serve.gateway.url, token)));
    return await measureCold(serve.gateway, firstSessions, leases);
  } finally {
    await Promise.all(firstSessions.map((client) => client.close()));
    await admin.close();
    await metrics.close();
  }
}
