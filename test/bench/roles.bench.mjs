/**
 * `npm run bench:roles`: what the edge -> node hop costs, side by side with one host, in one
 * run on this machine: `sandpool serve --role all` against `--role edge` routing to one
 * `--role node` (both on the same Docker engine, each its own deployment), measuring warm
 * CreateSession (a warm pool, each session destroyed after) and Execute `print(1)`, the two
 * paths interleaved round by round so load drifts hit both alike. Also a bare relay in front
 * of `--role all` (lib/bare-relay.mjs: one more process on the path, no logic), the floor of
 * any extra hop. `--quick` runs fewer rounds. Needs the built CLI, Postgres, Redis and Docker
 * with sandpool/sandbox:dev; everything it made is removed. Progress on stderr, figures on stdout.
 */
import { fileURLToPath } from "node:url";
import { createClient, createSession, destroySession, execPrintOne, freePort } from "./lib/client.mjs";
import {
  installCleanupHandlers,
  runBench,
  spawnTracked,
  stopProcess,
  tailOf,
  waitForLine,
} from "./lib/process.mjs";
import { createServeDeployment, serveBackendsAvailable } from "./lib/serve-deployment.mjs";
import { median } from "./lib/stats.mjs";
import { heading, latencyTable, printTable } from "./lib/table.mjs";
import { progress, timed } from "./lib/timing.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url, ["--quick"]);

const quick = process.argv.includes("--quick");
const ROUNDS = quick ? 8 : 40;
const EXECS_PER_ROUND = quick ? 5 : 10;
const MIN_IDLE = 4;
const REFILL_WAIT_MS = 700;
const NODE_SECRET = "bench-roles-node-secret-0123456789-abcdefghij";
const relayPath = fileURLToPath(new URL("./lib/bare-relay.mjs", import.meta.url));
const CONFIG = `
pools:
  - name: default
    image: sandpool/sandbox:dev
    minIdle: ${MIN_IDLE}
    maxTotal: 12
    coldStartTimeoutMs: 60000
node:
  heartbeatMs: 500
`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function startRelay(upstreamUrl) {
  const child = spawnTracked(process.execPath, [relayPath, upstreamUrl]);
  const log = tailOf(child);
  const match = await waitForLine(child, /^relay listening on (http:\/\/\S+)/, 60_000);
  child.stdout.resume();
  return { url: match[1], log, stop: () => stopProcess(child, 5_000) };
}

async function main() {
  installCleanupHandlers();
  if (!(await serveBackendsAvailable()))
    throw new Error("needs Postgres (127.0.0.1:5432) and Redis (127.0.0.1:6379)");
  const single = await createServeDeployment(CONFIG);
  const scaled = await createServeDeployment(CONFIG);
  try {
    await single.migrate();
    await scaled.migrate();
    const all = await single.startServe();
    const port = await freePort();
    await scaled.startGateway(undefined, {
      SANDPOOL_ROLE: "node",
      SANDPOOL_NODE_SECRETS: NODE_SECRET,
      SANDPOOL_NODE_ID: "bench-node",
      SANDPOOL_NODE_HOST: "127.0.0.1",
      SANDPOOL_NODE_PORT: String(port),
      SANDPOOL_NODE_ADVERTISE_URL: `http://127.0.0.1:${port}`,
    });
    const edge = await scaled.startGateway(undefined, {
      SANDPOOL_ROLE: "edge",
      SANDPOOL_NODE_SECRETS: NODE_SECRET,
    });
    const relay = await startRelay(all.url);
    progress(`all ${all.url}, edge ${edge.url} -> node 127.0.0.1:${port}, relay ${relay.url}`);
    await sleep(8_000); // both pools warm
    const paths = [
      { name: "--role all", client: createClient(all.url, await single.token("bench")) },
      { name: "bare relay -> all", client: createClient(relay.url, await single.token("bench")) },
      { name: "edge -> node", client: createClient(edge.url, await scaled.token("bench")) },
    ];
    const creates = new Map(paths.map((path) => [path.name, []]));
    const execs = new Map(paths.map((path) => [path.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const path of round % 2 === 0 ? paths : [...paths].reverse()) {
        const { ms, value: id } = await timed(() => createSession(path.client));
        creates.get(path.name).push(ms);
        for (let i = 0; i < EXECS_PER_ROUND; i++) {
          const exec = await timed(() => execPrintOne(path.client, id));
          execs.get(path.name).push(exec.ms);
        }
        await destroySession(path.client, id);
      }
      // Let the pools refill, so each CreateSession is a warm one.
      await sleep(REFILL_WAIT_MS);
      if (round % 10 === 9) progress(`round ${round + 1}/${ROUNDS}`);
    }
    heading(
      `warm CreateSession (${ROUNDS} each) and Execute print(1) (${ROUNDS * EXECS_PER_ROUND} each), ms`,
    );
    const table = latencyTable(["n", "median", "p90", "p99", "mean"]);
    printTable(table.headers, [
      ...paths.map((path) => table.row(`CreateSession, ${path.name}`, creates.get(path.name))),
      ...paths.map((path) => table.row(`Execute, ${path.name}`, execs.get(path.name))),
    ]);
    const signed = (ms) => `${ms >= 0 ? "+" : ""}${ms.toFixed(2)} ms`;
    const hop = (measure) => median(measure.get("edge -> node")) - median(measure.get("--role all"));
    const relayHop = (measure) =>
      median(measure.get("bare relay -> all")) - median(measure.get("--role all"));
    process.stdout.write(
      `\nedge -> node over --role all, medians: CreateSession ${signed(hop(creates))}, ` +
        `Execute ${signed(hop(execs))} (a bare relay hop: ${signed(relayHop(creates))} / ` +
        `${signed(relayHop(execs))})\n`,
    );
    for (const path of paths) await path.client.close();
    await relay.stop();
  } finally {
    await scaled.close();
    await single.close();
  }
}

runBench(main);
