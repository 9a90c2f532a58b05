/**
 * `npm run bench:sandbox`: start-up and exec round-trip figures of the built `sandpool sandbox`
 * server as the image and the process runtime run it (the bundle, dist/sandbox.mjs), each
 * printed beside a bare-process baseline and its target.
 *
 *   Start-up   spawn -> first POST /sessions answered 201, vs. running `python3 -c "print(1)"`.
 *   Exec       trivial code_execution through HTTP keep-alive, vs. spawning `python3 -c`.
 *
 * Loopback only, bounded loops, every child and temp dir cleaned up (also on errors and
 * Ctrl-C). Always exits 0 when the measurements ran, whether targets pass or not; exits 1 when
 * something failed. Progress goes to stderr, results to stdout.
 */
import { existsSync } from "node:fs";
import { createJsonClient, defaultHttpKind } from "./lib/http.mjs";
import { installCleanupHandlers, resolvePython, runBench, timeProcess } from "./lib/process.mjs";
import { createSession, sandboxProgram, startSandboxServer } from "./lib/sandbox-server.mjs";
import { summarize } from "./lib/stats.mjs";
import { checkBelow, heading, latencyTable, printTable } from "./lib/table.mjs";
import { formatMs, nowMs, progress, sample, withTimeout } from "./lib/timing.mjs";
import { handleUsage } from "./lib/usage.mjs";

handleUsage(import.meta.url, []);

const STARTUP_RUNS = 10;
const EXEC_WARMUP = 20;
const EXEC_CALLS = 500;
const BASH_WARMUP = 5;
const BASH_CALLS = 100;
const BASELINE_RUNS = 20;
const READY_TIMEOUT_MS = 15_000;
const TARGET_READY_MS = 300;
const TARGET_EXEC_MS = 5;

/** One exec call; throws unless it succeeded with the expected stdout. */
async function execExpect(client, sessionId, tool, input, stdout) {
  const answer = await client.send("POST", `/sessions/${sessionId}/exec`, { tool, input });
  const content = answer.body?.result_block?.content;
  if (answer.status !== 200 || content?.return_code !== 0 || content?.stdout !== stdout) {
    throw new Error(`${tool} answered ${answer.status}: ${answer.text}`);
  }
}

async function measureStartup(python) {
  const listening = [];
  const ready = [];
  const firstExec = [];
  for (let run = 1; run <= STARTUP_RUNS; run++) {
    const server = await startSandboxServer(python, READY_TIMEOUT_MS);
    const client = createJsonClient(server.url);
    try {
      const sessionId = await withTimeout(createSession(client), 10_000, "first POST /sessions");
      ready.push(nowMs() - server.start);
      listening.push(server.listeningMs);
      const before = nowMs();
      await withTimeout(
        execExpect(client, sessionId, "code_execution", { code: "print(1)" }, "1\n"),
        10_000,
        "first exec",
      );
      firstExec.push(nowMs() - before);
    } finally {
      await client.close();
      await server.stop();
    }
    progress(`start-up run ${run}/${STARTUP_RUNS}: ready in ${formatMs(ready.at(-1) ?? Number.NaN)}`);
  }
  return { listening, ready, firstExec };
}

async function measureExec(python) {
  const server = await startSandboxServer(python, READY_TIMEOUT_MS);
  const client = createJsonClient(server.url);
  // The other transport too, when both exist, so a client-side cost shows up as a difference.
  const other =
    defaultHttpKind === "undici" ? createJsonClient(server.url, { kind: "node:http" }) : undefined;
  try {
    const sessionId = await createSession(client);
    const printOne = (via) => () => execExpect(via, sessionId, "code_execution", { code: "print(1)" }, "1\n");
    progress(`exec: code_execution via ${client.kind}, ${EXEC_WARMUP} warm-up + ${EXEC_CALLS} timed calls`);
    const code = await sample(EXEC_CALLS, printOne(client), { warmup: EXEC_WARMUP });
    let codeOther;
    if (other) {
      progress(`exec: code_execution via ${other.kind}, ${EXEC_WARMUP} warm-up + ${EXEC_CALLS} timed calls`);
      codeOther = await sample(EXEC_CALLS, printOne(other), { warmup: EXEC_WARMUP });
    }
    progress(`exec: bash_code_execution, ${BASH_WARMUP} warm-up + ${BASH_CALLS} timed calls`);
    const bash = await sample(
      BASH_CALLS,
      () => execExpect(client, sessionId, "bash_code_execution", { command: "echo 1" }, "1\n"),
      { warmup: BASH_WARMUP },
    );
    const destroyed = await client.send("DELETE", `/sessions/${sessionId}`);
    if (destroyed.status !== 204) throw new Error(`DELETE answered ${destroyed.status}: ${destroyed.text}`);
    return { code, codeOther, otherKind: other?.kind, bash };
  } finally {
    await client.close();
    await other?.close();
    await server.stop();
  }
}

const { headers, row } = latencyTable(["n", "median", "p99", "min", "max"]);

function ratio(value, baseline) {
  return `${(value / baseline).toFixed(2)}x`;
}

async function main() {
  installCleanupHandlers();
  if (!existsSync(sandboxProgram))
    throw new Error(`${sandboxProgram} is missing: run \`npm run build\` first`);
  const python = resolvePython("python3");
  progress(`python: ${python}`);
  progress(`node:   ${process.execPath} (${process.version})`);

  progress(`phase 1/4: baseline, bare python3 -c "print(1)" x ${Math.max(STARTUP_RUNS, BASELINE_RUNS)}`);
  const pythonRuns = await sample(Math.max(STARTUP_RUNS, BASELINE_RUNS), () =>
    timeProcess(python, ["-c", "print(1)"]),
  );
  const pythonStartup = pythonRuns.slice(0, STARTUP_RUNS);
  const nodeRuns = await sample(STARTUP_RUNS, () => timeProcess(process.execPath, ["-e", "0"]));
  const bashRuns = await sample(BASELINE_RUNS, () => timeProcess("bash", ["-c", "echo 1"]));

  progress(`phase 2/4: start-up, ${STARTUP_RUNS} server starts`);
  const startup = await measureStartup(python);

  progress(`phase 3/4: exec round trips on one server (HTTP keep-alive, ${defaultHttpKind})`);
  const exec = await measureExec(python);

  progress("phase 4/4: report");
  const readyMedian = summarize(startup.ready).median;
  const codeMedian = summarize(exec.code).median;
  const readyTarget = checkBelow(readyMedian, TARGET_READY_MS);
  const execTarget = checkBelow(codeMedian, TARGET_EXEC_MS);

  process.stdout.write(
    `sandpool sandbox bench  node ${process.version}  python ${python}\n` +
      "Targets are judged on the median; baselines are bare processes run the same way.\n",
  );

  heading(`Start-up (${STARTUP_RUNS} runs)`);
  printTable(headers, [
    row("sandpool: spawn -> POST /sessions 201", startup.ready, readyTarget),
    row("sandpool: spawn -> listening line", startup.listening),
    row("sandpool: first print(1) on new session", startup.firstExec),
    row('baseline: python3 -c "print(1)" to exit', pythonStartup),
    row("info: node -e 0 to exit", nodeRuns),
  ]);
  process.stdout.write(
    `ready median ${formatMs(readyMedian)} = ${ratio(readyMedian, summarize(pythonStartup).median)} ` +
      `the python baseline; target < ${TARGET_READY_MS} ms: ${readyTarget.verdict}\n`,
  );

  heading(`Exec round trip (one session, HTTP keep-alive via ${defaultHttpKind})`);
  printTable(headers, [
    row('sandpool: code_execution "print(1)"', exec.code, execTarget),
    ...(exec.codeOther ? [row(`info: same via ${exec.otherKind}`, exec.codeOther)] : []),
    row('sandpool: bash_code_execution "echo 1"', exec.bash),
    row('baseline: spawn python3 -c "print(1)"', pythonRuns),
    row('baseline: spawn bash -c "echo 1"', bashRuns),
  ]);
  process.stdout.write(
    `code_execution median ${formatMs(codeMedian)} (p99 ${formatMs(summarize(exec.code).p99)}) = ` +
      `${ratio(codeMedian, summarize(pythonRuns).median)} the spawn baseline; ` +
      `target < ${TARGET_EXEC_MS} ms: ${execTarget.verdict}\n`,
  );

  heading("Summary");
  printTable(
    ["target", "figure", "limit", "result"],
    [
      ["server ready (median)", formatMs(readyMedian), readyTarget.label, readyTarget.verdict],
      ["trivial exec round trip (median)", formatMs(codeMedian), execTarget.label, execTarget.verdict],
    ],
  );
}

await runBench(main);
