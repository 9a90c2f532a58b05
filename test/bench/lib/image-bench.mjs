/**
 * Per-image figures for the sandbox images sandpool ships (issue 11), through the built
 * `sandpool dev --runtime docker` on loopback:
 *
 *   cold start   CreateSession with an empty pool (min_idle 0): docker create + start + ready
 *                + the inner session (on the data-science image: with its preload)
 *   warm lease   CreateSession with a warm pool (min_idle 1)
 *   first exec   `import pandas as pd; print(pd.__version__)` as the first call of a fresh
 *                lease: sandpool (warm lease, modules preloaded at warm-up) against a cold
 *                interpreter, a fresh `python3 -c` in a running container of the same image
 *                (`docker exec`; `python3 -c pass` the same way shows what docker exec and
 *                Python's start-up cost alone), and `docker run --rm` of the same command.
 *
 * Used by lease.bench.mjs (its docker phase) and datascience.bench.mjs. Loopback and
 * network-less containers only; every container it starts is removed.
 */
import { execFileSync } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { Client } from "undici";
import { spawnTracked, stopProcess, tailOf, timeProcess, waitForLine } from "./process.mjs";
import { summarize } from "./stats.mjs";
import { heading, printTable } from "./table.mjs";
import { formatMs, nowMs, progress, withTimeout } from "./timing.mjs";

export const LEAN_IMAGE = "sandpool/sandbox:dev";
export const DATASCIENCE_IMAGE = "sandpool/sandbox-datascience:dev";
const IMAGES = [
  { label: "lean", image: LEAN_IMAGE, pool: "default" },
  { label: "datascience", image: DATASCIENCE_IMAGE, pool: "datascience" },
];
const PANDAS_CODE = "import pandas as pd; print(pd.__version__)";

const COLD_STARTS = 3;
const WARM_LEASES = 5;
const COLD_INTERPRETERS = 5;
const DOCKER_RUNS = 3;
const START_TIMEOUT_MS = 120_000;
const CALL_TIMEOUT_MS = 90_000;
const REFILL_TIMEOUT_MS = 120_000;

const cliPath = fileURLToPath(new URL("../../../dist/cli/main.js", import.meta.url));
const TOKEN_LINE = /^SANDPOOL_TOKEN=(\S+)/;

export function imagePresent(image) {
  try {
    execFileSync("docker", ["image", "inspect", image], { stdio: "ignore", timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function createClient(baseUrl, token) {
  const client = new Client(new URL(baseUrl).origin, {
    headersTimeout: CALL_TIMEOUT_MS,
    bodyTimeout: CALL_TIMEOUT_MS,
  });
  const auth = token ? { authorization: `Bearer ${token}` } : {};
  return {
    async send(method, path, payload) {
      const body = payload === undefined ? undefined : JSON.stringify(payload);
      const headers = body ? { ...auth, "content-type": "application/json" } : auth;
      const res = await client.request({ method, path, headers, body });
      const text = await res.body.text();
      const json = (res.headers["content-type"] ?? "").includes("application/json") && text.length > 0;
      return { status: res.statusCode, body: json ? JSON.parse(text) : text, text };
    },
    close: () => client.close(),
  };
}

async function startDockerDev(dataDir, minIdle) {
  const port = await freePort();
  const child = spawnTracked(process.execPath, [
    ...[cliPath, "dev", "--host", "127.0.0.1", "--port", String(port), "--data-dir", dataDir],
    ...["--min-idle", String(minIdle), "--max-total", "4", "--runtime", "docker"],
  ]);
  const log = tailOf(child);
  const match = await waitForLine(child, TOKEN_LINE, START_TIMEOUT_MS);
  child.stdout.resume();
  const url = `http://127.0.0.1:${port}`;
  return {
    client: createClient(url, match[1]),
    metrics: createClient(url),
    stop: async () => {
      const exit = await stopProcess(child, 30_000);
      if (exit.forced) progress(`warning: dev gateway needed SIGKILL\n${log()}`);
    },
  };
}

/**
 * Removes the dev containers whose socket directory lies in `dataDir`: a sandbox still
 * starting when a dev gateway stops can outlive it, and this bench leaves nothing behind.
 */
function removeLeftoverContainers(dataDir) {
  const ids = execFileSync("docker", ["ps", "-aq", "--filter", "label=sandpool.deployment=dev"], {
    encoding: "utf8",
    timeout: 30_000,
  })
    .split("\n")
    .filter(Boolean);
  for (const id of ids) {
    const mounts = execFileSync(
      "docker",
      ["inspect", "--format", "{{range .Mounts}}{{.Source}} {{end}}", id],
      {
        encoding: "utf8",
        timeout: 30_000,
      },
    );
    if (mounts.split(" ").some((source) => source.startsWith(`${dataDir}/`))) {
      execFileSync("docker", ["rm", "-f", id], { stdio: "ignore", timeout: 30_000 });
    }
  }
}

async function idleIn(metrics, pool) {
  const answer = await metrics.send("GET", "/metrics");
  const line = answer.text
    .split("\n")
    .find(
      (l) =>
        l.startsWith("sandpool_pool_sandboxes{") &&
        l.includes(`pool="${pool}"`) &&
        l.includes('state="idle"'),
    );
  return line ? Number(line.split(" ").at(-1)) : 0;
}

async function waitForIdle(metrics, pool) {
  const deadline = nowMs() + REFILL_TIMEOUT_MS;
  while ((await idleIn(metrics, pool)) < 1) {
    if (nowMs() > deadline) throw new Error(`pool ${pool} did not refill within ${REFILL_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // A sandbox that just became idle may still be settling; let the machine go quiet.
  await new Promise((resolve) => setTimeout(resolve, 500));
}

async function create(client, image) {
  const answer = await withTimeout(client.send("POST", "/sessions", { image }), CALL_TIMEOUT_MS, "create");
  if (answer.status !== 201) throw new Error(`POST /sessions answered ${answer.status}: ${answer.text}`);
  return answer.body.session_id;
}

async function exec(client, sessionId, code) {
  const answer = await client.send("POST", `/sessions/${sessionId}/exec`, {
    tool: "code_execution",
    input: { code },
  });
  const content = answer.body?.result_block?.content;
  if (answer.status !== 200 || content?.return_code !== 0) {
    throw new Error(`exec answered ${answer.status}: ${answer.text}`);
  }
  return content.stdout.trim();
}

async function destroy(client, sessionId) {
  const answer = await client.send("DELETE", `/sessions/${sessionId}`);
  if (answer.status !== 204) throw new Error(`DELETE answered ${answer.status}: ${answer.text}`);
}

/** A fresh interpreter per call in one running, network-less container of the image. */
async function measureColdInterpreter(image) {
  const name = `sandpool-bench-${process.pid}-${Date.now()}`;
  execFileSync("docker", ["run", "-d", "--rm", "--network", "none", "--name", name, image, "sleep", "600"], {
    stdio: "ignore",
    timeout: 60_000,
  });
  try {
    const run = (code) => timeProcess("docker", ["exec", name, "python3", "-c", code], { timeoutMs: 60_000 });
    await run("pass");
    const bare = [];
    const pandas = [];
    for (let i = 0; i < COLD_INTERPRETERS; i++) {
      bare.push(await run("pass"));
      pandas.push(await run(PANDAS_CODE));
    }
    const dockerRun = [];
    for (let i = 0; i < DOCKER_RUNS; i++) {
      dockerRun.push(
        await timeProcess(
          "docker",
          ["run", "--rm", "--network", "none", image, "python3", "-c", PANDAS_CODE],
          {
            timeoutMs: 60_000,
          },
        ),
      );
    }
    return { bare, pandas, dockerRun };
  } finally {
    execFileSync("docker", ["rm", "-f", name], { stdio: "ignore", timeout: 30_000 });
  }
}

/** Runs every measure; the data-science ones only when its image is present. */
export async function measureImages(dataDir) {
  const images = IMAGES.filter(({ image }) => imagePresent(image));
  const result = { images: images.map((i) => i.label), cold: {}, warm: {}, firstExec: {}, pandasVersion: "" };
  if (!images.some((i) => i.label === "datascience")) {
    progress(
      `images: ${DATASCIENCE_IMAGE} missing (npm run build:sandbox-image): data-science figures skipped`,
    );
  }

  progress(`images: cold starts (min_idle 0), ${COLD_STARTS} per image`);
  let dev = await startDockerDev(dataDir, 0);
  try {
    for (const { label, image } of images) {
      result.cold[label] = [];
      for (let i = 0; i < COLD_STARTS; i++) {
        const start = nowMs();
        const id = await create(dev.client, image);
        result.cold[label].push(nowMs() - start);
        await destroy(dev.client, id);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  } finally {
    await dev.stop();
    removeLeftoverContainers(dataDir);
  }

  progress(`images: warm leases and first exec (min_idle 1), ${WARM_LEASES} per image`);
  dev = await startDockerDev(dataDir, 1);
  try {
    for (const { label, image, pool } of images) {
      result.warm[label] = [];
      result.firstExec[label] = [];
      for (let i = 0; i < WARM_LEASES; i++) {
        await waitForIdle(dev.metrics, pool);
        let start = nowMs();
        const id = await create(dev.client, image);
        result.warm[label].push(nowMs() - start);
        if (label === "datascience") {
          start = nowMs();
          result.pandasVersion = await exec(dev.client, id, PANDAS_CODE);
          result.firstExec[label].push(nowMs() - start);
        }
        await destroy(dev.client, id);
      }
    }
  } finally {
    await dev.stop();
    removeLeftoverContainers(dataDir);
  }

  if (images.some((i) => i.label === "datascience")) {
    progress(`images: cold interpreters in a ${DATASCIENCE_IMAGE} container`);
    result.coldInterpreter = await measureColdInterpreter(DATASCIENCE_IMAGE);
  }
  return result;
}

const median = (samples) => (samples && samples.length > 0 ? formatMs(summarize(samples).median) : "-");

export function printImageReport(result) {
  heading("Sandbox images, docker runtime (medians)");
  printTable(
    ["image", "cold start (pool empty)", "n", "warm lease", "n"],
    result.images.map((label) => [
      label,
      median(result.cold[label]),
      result.cold[label]?.length ?? 0,
      median(result.warm[label]),
      result.warm[label]?.length ?? 0,
    ]),
  );
  const ci = result.coldInterpreter;
  if (!ci) return;
  heading(`First \`${PANDAS_CODE}\` (pandas ${result.pandasVersion}, medians)`);
  printTable(
    ["path", "median", "n"],
    [
      [
        "sandpool: first exec of a warm lease (preloaded)",
        median(result.firstExec.datascience),
        result.firstExec.datascience.length,
      ],
      ["cold interpreter: docker exec python3 -c", median(ci.pandas), ci.pandas.length],
      ["  of which docker exec + python start (-c pass)", median(ci.bare), ci.bare.length],
      ["cold container: docker run --rm python3 -c", median(ci.dockerRun), ci.dockerRun.length],
    ],
  );
  const saved = summarize(ci.pandas).median - summarize(result.firstExec.datascience).median;
  process.stdout.write(`preloading saves ${formatMs(saved)} on the first import of a session\n`);
}
