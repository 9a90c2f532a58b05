/**
 * `npm run bench:memory`: the gateway's memory under the largest answers sandboxes give,
 * measured on the built `sandpool dev` (dist/cli/main.js, process runtime) on loopback.
 *
 * The dev gateway's resident set (VmRSS of its process, read from /proc every 10 ms; the
 * sandboxes are other processes) is reported for each load side by side with its idle
 * value in the same run:
 *
 *   idle               the gateway with CONCURRENT sessions leased and nothing running
 *   print(1)           CONCURRENT trivial code_execution calls at once: the baseline load
 *   editor view        CONCURRENT `view`s at once of a 3 MB file of newlines (before the
 *                      caps: 32 MB of JSON each, ~58 MB of gateway RSS per call)
 *   max output, text   CONCURRENT code_execution calls at once printing past the 1 MiB cap
 *                      on stdout and on stderr
 *   max output, ctrl   the same with control characters, which JSON escapes six-fold: the
 *                      largest answer a sound sandbox can give (~12 MiB)
 *
 * Each load runs ROUNDS times; the table shows the highest peak. Sessions are spread over a
 * few workspaces so per-workspace quotas do not throttle the bench. Loopback only, every
 * child and temp dir cleaned up. Exits 0 when the measurements ran, whether the target
 * passes or not; 1 when something failed. Progress goes to stderr, results to stdout.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import {
  installCleanupHandlers,
  makeTempDir,
  resolvePython,
  runBench,
  spawnTracked,
  stopProcess,
  tailOf,
  waitForLine,
} from "./lib/process.mjs";
import { heading, printTable } from "./lib/table.mjs";
import { formatMs, nowMs, progress } from "./lib/timing.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url, []);

const CONCURRENT = 20;
const ROUNDS = 3;
const WORKSPACES = 4; // CONCURRENT / WORKSPACES sessions each, under the default 10 per workspace
const SAMPLE_MS = 10;
const SETTLE_MS = 1_000;
const START_TIMEOUT_MS = 120_000; // the first dev start runs PGlite's initdb
const CALL_TIMEOUT_MS = 120_000;
/** Peak growth over idle the gateway should stay under with CONCURRENT worst-case answers. */
const TARGET_GROWTH_MB = 200;
const MB = 1e6;

const cliPath = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const TOKEN_LINE = /^SANDPOOL_TOKEN=(\S+)/;

const LOADS = [
  { name: "print(1)", tool: "code_execution", input: { code: "print(1)" } },
  {
    name: "editor view, 3 MB of newlines",
    tool: "text_editor_code_execution",
    input: { command: "view", path: "newlines.txt" },
  },
  {
    name: "max output, text",
    tool: "code_execution",
    input: { code: "import sys\nsys.stdout.write('x' * 1_200_000)\nsys.stderr.write('y' * 1_200_000)" },
  },
  {
    name: "max output, control chars",
    tool: "code_execution",
    input: {
      code: "import sys\nsys.stdout.write('\\x01' * 1_200_000)\nsys.stderr.write('\\x02' * 1_200_000)",
    },
  },
];

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

/** Resident set of a process in bytes, from /proc (Linux). */
function rssOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}

async function startDev(dataDir, python) {
  const port = await freePort();
  const child = spawnTracked(process.execPath, [
    cliPath,
    "dev",
    ...["--host", "127.0.0.1", "--port", String(port), "--data-dir", dataDir],
    ...["--python", python, "--runtime", "process"],
    ...["--min-idle", String(CONCURRENT), "--max-total", String(CONCURRENT + 4)],
  ]);
  const log = tailOf(child);
  const match = await waitForLine(child, TOKEN_LINE, START_TIMEOUT_MS);
  child.stdout.resume();
  return {
    pid: child.pid,
    url: `http://127.0.0.1:${port}`,
    token: match[1],
    log,
    stop: async () => {
      const exit = await stopProcess(child, 15_000);
      if (exit.forced) progress(`warning: dev gateway needed SIGKILL\n${log()}`);
    },
  };
}

function mintToken(dataDir, workspace) {
  return execFileSync(
    process.execPath,
    [cliPath, "token", "--workspace", workspace, "--data-dir", dataDir, "--ttl", "3600"],
    { encoding: "utf8", timeout: 30_000 },
  ).trim();
}

/** Many connections, so CONCURRENT calls really are in flight together. */
function createClient(url) {
  const pool = new Pool(url, {
    connections: CONCURRENT * 2,
    headersTimeout: CALL_TIMEOUT_MS,
    bodyTimeout: CALL_TIMEOUT_MS,
  });
  return {
    async send(token, method, path, payload) {
      const body = payload === undefined ? undefined : JSON.stringify(payload);
      const headers = { authorization: `Bearer ${token}` };
      if (body) headers["content-type"] = "application/json";
      const res = await pool.request({ method, path, headers, body });
      const text = await res.body.text();
      return { status: res.statusCode, text };
    },
    close: () => pool.close(),
  };
}

async function exec(client, session, tool, input) {
  const answer = await client.send(session.token, "POST", `/sessions/${session.id}/exec`, { tool, input });
  if (answer.status !== 200) throw new Error(`exec answered ${answer.status}: ${answer.text.slice(0, 500)}`);
  const content = JSON.parse(answer.text).result_block.content;
  return {
    bytes: Buffer.byteLength(answer.text),
    truncated: /\[output truncated: /.test(content.stdout + content.stderr),
  };
}

/** Runs `load` on every session at once, sampling the gateway's RSS until all have answered. */
async function measureLoad(gateway, client, sessions, load) {
  let peak = rssOf(gateway.pid);
  const timer = setInterval(() => {
    peak = Math.max(peak, rssOf(gateway.pid));
  }, SAMPLE_MS);
  const started = nowMs();
  try {
    const answers = await Promise.all(
      sessions.map((session) => exec(client, session, load.tool, load.input)),
    );
    peak = Math.max(peak, rssOf(gateway.pid));
    return {
      peak,
      wallMs: nowMs() - started,
      answerBytes: Math.max(...answers.map((answer) => answer.bytes)),
      truncated: answers.filter((answer) => answer.truncated).length,
    };
  } finally {
    clearInterval(timer);
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
const mb = (bytes) => `${(bytes / MB).toFixed(1)} MB`;

async function main() {
  installCleanupHandlers();
  if (!existsSync(cliPath)) throw new Error(`${cliPath} is missing: run \`npm run build\` first`);
  if (!existsSync("/proc/self/status")) throw new Error("this bench reads /proc: Linux only");
  const python = resolvePython("python3");
  progress(
    `node ${process.version}, load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")} on ${cpus().length} CPUs`,
  );
  const dataDir = await makeTempDir("sandpool-memory-bench-");
  const gateway = await startDev(dataDir, python);
  const client = createClient(gateway.url);
  try {
    const tokens = Array.from({ length: WORKSPACES }, (_, i) => mintToken(dataDir, `memory-${i}`));
    const sessions = [];
    for (let i = 0; i < CONCURRENT; i++) {
      const token = tokens[i % WORKSPACES];
      const created = await client.send(token, "POST", "/sessions", {});
      if (created.status !== 201)
        throw new Error(`POST /sessions answered ${created.status}: ${created.text}`);
      const session = { id: JSON.parse(created.text).session_id, token };
      await exec(client, session, "bash_code_execution", {
        command: "head -c 3000000 /dev/zero | tr '\\0' '\\n' > newlines.txt",
      });
      sessions.push(session);
    }
    progress(`${CONCURRENT} sessions leased, each with a 3 MB file of newlines`);
    // One untimed round of the baseline load, so idle is measured on a gateway that has served.
    await measureLoad(gateway, client, sessions, LOADS[0]);
    await settle();
    const idle = rssOf(gateway.pid);

    const rows = [["idle", "", "", "", mb(idle), "", ""]];
    let worstGrowth = 0;
    for (const load of LOADS) {
      let worst;
      for (let round = 0; round < ROUNDS; round++) {
        const result = await measureLoad(gateway, client, sessions, load);
        if (!worst || result.peak > worst.peak) worst = result;
        progress(
          `${load.name}: round ${round + 1}/${ROUNDS}, peak ${mb(result.peak)} in ${formatMs(result.wallMs)}`,
        );
        await settle();
      }
      if (load !== LOADS[0]) worstGrowth = Math.max(worstGrowth, worst.peak - idle);
      rows.push([
        load.name,
        String(CONCURRENT),
        mb(worst.answerBytes),
        `${worst.truncated}/${CONCURRENT}`,
        mb(worst.peak),
        `+${mb(worst.peak - idle)}`,
        formatMs(worst.wallMs),
      ]);
    }
    const after = rssOf(gateway.pid);

    heading(`Gateway RSS, ${CONCURRENT} calls at once (worst of ${ROUNDS} rounds)`);
    printTable(
      ["load", "calls", "largest answer", "marked truncated", "peak RSS", "over idle", "wall"],
      rows,
    );
    process.stdout.write(`\nRSS after the loads: ${mb(after)} (idle was ${mb(idle)})\n`);
    const pass = worstGrowth < TARGET_GROWTH_MB * MB;
    process.stdout.write(
      `worst-case growth over idle: +${mb(worstGrowth)}, target < ${TARGET_GROWTH_MB} MB: ${pass ? "PASS" : "FAIL"}\n`,
    );
  } finally {
    await client.close();
    await gateway.stop();
  }
}

await runBench(main);
