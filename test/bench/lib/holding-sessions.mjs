/**
 * The gateway's memory holding many leased sessions: the light gateway (light-gateway.mjs,
 * serve's gateway on Redis and Postgres with the shared-server runtime) leases `sessions`
 * sessions over several workspaces and keeps them; its RSS is read at rest and holding them.
 */
import { fileURLToPath } from "node:url";
import { createClient, createSession } from "./client.mjs";
import { makeTempDir, onCleanup, spawnTracked, stopProcess, tailOf, waitForLine } from "./process.mjs";
import { createServeDeployment } from "./serve-deployment.mjs";
import { progress } from "./timing.mjs";

const farmPath = fileURLToPath(new URL("./session-farm.mjs", import.meta.url));
const FARM_SERVERS = 4;
const CONCURRENCY = 8;
const SETTLE_MS = 3_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function measureHoldingSessions(python, { sessions, workspaces }) {
  const perWorkspace = Math.ceil(sessions / workspaces);
  const deployment = await createServeDeployment(`
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: 16
    maxTotal: ${sessions + 64}
    warmupConcurrency: 8
policy:
  maxConcurrentSessions: ${perWorkspace + 8}
  sessionsPerMinute: ${perWorkspace * 10}
`);
  const unregister = onCleanup(() => deployment.close());
  const root = await makeTempDir("sandpool-bench-farm-");
  const farm = spawnTracked(process.execPath, [farmPath, String(FARM_SERVERS), root, python]);
  const farmLog = tailOf(farm);
  const clients = [];
  try {
    const match = await waitForLine(farm, /^farm listening on (\S+)/, 60_000);
    farm.stdout.resume();
    await deployment.migrate();
    const gateway = await deployment.startLightGateway(match[1].split(","));
    await sleep(SETTLE_MS);
    const restMb = await gateway.rss();
    for (let w = 0; w < workspaces; w++) {
      clients.push(createClient(gateway.url, await deployment.token(`bench-hold-${w}`)));
    }
    let created = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < sessions) {
          const i = next++;
          await createSession(clients[i % workspaces]);
          created++;
          if (created % 250 === 0) progress(`holding sessions: ${created}/${sessions} leased`);
        }
      }),
    );
    await sleep(SETTLE_MS);
    const holdingMb = await gateway.rss();
    return { sessions: created, restMb, holdingMb, perSessionKb: ((holdingMb - restMb) * 1024) / created };
  } catch (error) {
    throw new Error(`${error.message}\nfarm log:\n${farmLog()}`);
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    unregister();
    await deployment.close();
    await stopProcess(farm, 10_000);
  }
}
