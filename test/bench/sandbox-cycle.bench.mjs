#!/usr/bin/env node
/**
 * Where a sandbox container's CPU goes, phase by phase, for one image beside another in the
 * same run (alternating, so the machine's other load falls on both alike): a fresh
 * container's start (to its first /health answer, then until nothing in it runs: the zygote
 * is ready), its first session (CreateSession, which waits for the fork; Execute `print(1)`;
 * DeleteSession), and the churned session as the gateway drives it (POST /sandbox/recycle,
 * which scrubs and creates the next session, forking its interpreter in the background;
 * Execute `print(1)`; DeleteSession).
 *
 * Each phase is read from the container's cgroup (every process in it, exited ones too),
 * after waiting until its CPU stops moving, so work an answer leaves running (a background
 * fork, an interpreter's exit, a session's files) counts in the phase that started it. Split
 * into the server's threads, the zygote's and the rest (forked interpreters, the programs the
 * server starts, the runtime's init at start). "cycle, back to back" is the same churned cycle
 * with no wait between phases: the cost a saturated machine sees.
 *
 *   node test/bench/sandbox-cycle.bench.mjs --image sandpool/sandbox:cycle --base-image sandpool/sandbox:dev
 *     [--rounds 3] [--starts 3] [--cycles 100] [--json]
 */
import { parseArgs } from "node:util";
import { cgroupCpuMs, processCpuMs, settledCpuMs, startWatchedContainer } from "./lib/container-cpu.mjs";

const { values: args } = parseArgs({
  options: {
    image: { type: "string", default: "sandpool/sandbox:dev" },
    "base-image": { type: "string" },
    rounds: { type: "string", default: "3" },
    starts: { type: "string", default: "3" },
    cycles: { type: "string", default: "100" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (args.help) {
  console.log(
    "Usage: node test/bench/sandbox-cycle.bench.mjs --image TAG [--base-image TAG] [--rounds N] [--starts N] [--cycles N] [--json]",
  );
  process.exit(0);
}
const rounds = Number(args.rounds);
const starts = Number(args.starts);
const cycles = Number(args.cycles);
const images = args["base-image"] ? [args["base-image"], args.image] : [args.image];

/** phase -> image -> { total: [], server: [], zygote: [] } (ms per occurrence). */
const samples = new Map();
function record(phase, image, parts) {
  if (!samples.has(phase)) samples.set(phase, new Map());
  const byImage = samples.get(phase);
  if (!byImage.has(image)) byImage.set(image, { total: [], server: [], zygote: [] });
  const s = byImage.get(image);
  for (const key of ["total", "server", "zygote"]) s[key].push(parts[key] ?? Number.NaN);
}

/** Runs `work`, waits until the container is quiet, and records its CPU as `phase`. */
async function phase(box, image, name, work) {
  const before = await cgroupCpuMs(box.id);
  const procBefore = await processCpuMs(box.pids);
  const value = await work();
  const after = await settledCpuMs(box.id);
  const procAfter = await processCpuMs(box.pids);
  record(name, image, {
    total: after - before,
    server: procAfter.server - procBefore.server,
    zygote: procAfter.zygote - procBefore.zygote,
  });
  return value;
}

async function send(box, method, route, body, status) {
  const answer = await box.client.send(method, route, body);
  if (answer.status !== status)
    throw new Error(`${method} ${route} answered ${answer.status}: ${answer.text}`);
  return answer.body;
}
const exec = async (box, session) => {
  const body = await send(
    box,
    "POST",
    `/sessions/${session}/exec`,
    { tool: "code_execution", input: { code: "print(1)" } },
    200,
  );
  if (body.result_block?.content?.stdout !== "1\n") throw new Error(`print(1) gave ${JSON.stringify(body)}`);
};

async function measureImage(image) {
  let kept;
  for (let i = 0; i < starts; i++) {
    const box = await startWatchedContainer(image);
    const proc = await processCpuMs(box.pids);
    record("start: to /health", image, { total: box.startCpuMs.ready });
    record("start: /health to quiet (zygote)", image, {
      total: box.startCpuMs.settled - box.startCpuMs.ready,
    });
    record("start: in all", image, { total: box.startCpuMs.settled, ...proc });
    const { session_id: first } = await phase(box, image, "first CreateSession (waits for the fork)", () =>
      send(box, "POST", "/sessions", {}, 201),
    );
    await phase(box, image, "first Execute print(1)", () => exec(box, first));
    await phase(box, image, "first DeleteSession", () =>
      send(box, "DELETE", `/sessions/${first}`, undefined, 204),
    );
    if (i < starts - 1) await box.stop();
    else kept = box;
  }
  const box = kept;
  try {
    // A few cycles first: the server's code paths warm (JIT), as in a sandbox that served some.
    for (let i = 0; i < 20; i++) {
      const { session_id } = await send(box, "POST", "/sandbox/recycle", {}, 201);
      await exec(box, session_id);
      await send(box, "DELETE", `/sessions/${session_id}`, undefined, 204);
    }
    for (let i = 0; i < cycles; i++) {
      const { session_id } = await phase(box, image, "recycle (scrub + next session, its fork)", () =>
        send(box, "POST", "/sandbox/recycle", {}, 201),
      );
      await phase(box, image, "Execute print(1)", () => exec(box, session_id));
      await phase(box, image, "DeleteSession (+ interpreter exit, files)", () =>
        send(box, "DELETE", `/sessions/${session_id}`, undefined, 204),
      );
    }
    // Back to back: what a churning gateway asks, with no pause for the container to go quiet.
    await settledCpuMs(box.id);
    const before = await cgroupCpuMs(box.id);
    const procBefore = await processCpuMs(box.pids);
    for (let i = 0; i < cycles; i++) {
      const { session_id } = await send(box, "POST", "/sandbox/recycle", {}, 201);
      await exec(box, session_id);
      await send(box, "DELETE", `/sessions/${session_id}`, undefined, 204);
    }
    const after = await settledCpuMs(box.id);
    const procAfter = await processCpuMs(box.pids);
    record("cycle, back to back (per cycle)", image, {
      total: (after - before) / cycles,
      server: (procAfter.server - procBefore.server) / cycles,
      zygote: (procAfter.zygote - procBefore.zygote) / cycles,
    });
  } finally {
    await box.stop();
  }
}

for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? images : [...images].reverse();
  for (const image of order) {
    process.stderr.write(`round ${round + 1}/${rounds}: ${image}\n`);
    await measureImage(image);
  }
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(2) : "-");

const report = [];
for (const [name, byImage] of samples) {
  const row = { phase: name };
  for (const image of images) {
    const s = byImage.get(image);
    if (!s) continue;
    const rest = s.total.map((t, i) => t - (s.server[i] || 0) - (s.zygote[i] || 0));
    row[image] = {
      n: s.total.length,
      mean: mean(s.total),
      median: median(s.total),
      server: mean(s.server),
      zygote: mean(s.zygote),
      rest: mean(rest),
    };
  }
  report.push(row);
}

if (args.json) {
  console.log(JSON.stringify({ images, rounds, starts, cycles, report }, null, 2));
} else {
  console.log(`CPU ms inside the container per phase (mean, median; server / zygote / rest means)`);
  const header = ["phase", ...images.flatMap((image) => [`${image} mean`, "median", "srv/zyg/rest"])];
  if (images.length === 2) header.push("change");
  const lines = [header];
  for (const row of report) {
    const line = [row.phase];
    for (const image of images) {
      const r = row[image];
      line.push(
        r ? fmt(r.mean) : "-",
        r ? fmt(r.median) : "-",
        r ? `${fmt(r.server)}/${fmt(r.zygote)}/${fmt(r.rest)}` : "-",
      );
    }
    if (images.length === 2) {
      const [a, b] = images.map((image) => row[image]?.mean);
      line.push(a ? `${(((b - a) / a) * 100).toFixed(0)}%` : "-");
    }
    lines.push(line);
  }
  const widths = header.map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
  for (const l of lines) console.log(l.map((cell, i) => String(cell).padEnd(widths[i])).join("  "));
}
