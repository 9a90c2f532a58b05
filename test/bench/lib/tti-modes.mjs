/**
 * bench:tti's modes: how sessions arrive (one after another, every 100 ms, all at once) and
 * what one sample is: CreateSession, then bash `echo hello` in the new session, timed from the
 * request to the command's answer. Sessions are held until the mode ends, then deleted. Each
 * mode but `again` begins once every pool holds its minIdle idle (a deployment at rest).
 */
import { createClient } from "./client.mjs";
import { summarize } from "./stats.mjs";
import { nowMs, progress } from "./timing.mjs";

export const TTI_MODES = ["sequential", "staggered", "burst", "again"];

/** The issue's targets, p99 in ms. */
export const TTI_TARGETS = { sequential: 100, staggered: 300, burst: 1500, again: 400 };

const SEQUENTIAL = 20;
const STAGGERED = 50;
const STAGGER_MS = 100;
/** A sample may wait this long (a burst behind container starts takes tens of seconds). */
const SAMPLE_TIMEOUT_MS = 120_000;
/** How long `again` waits for the burst's sandboxes to be parked. */
const PARK_WAIT_MS = 60_000;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One sample on a connection of its own: `{ ms, sessionId }` or `{ error }`. */
async function timeToInteractive(url, token) {
  const client = createClient(url, token, { timeoutMs: SAMPLE_TIMEOUT_MS });
  const started = nowMs();
  try {
    const created = await client.send("POST", "/sessions", {});
    if (created.status !== 201)
      return { client, error: `POST /sessions ${created.status}: ${created.text.slice(0, 200)}` };
    const sessionId = created.body.session_id;
    const ran = await client.send("POST", `/sessions/${sessionId}/exec`, {
      tool: "bash_code_execution",
      input: { command: "echo hello" },
    });
    const content = ran.body?.result_block?.content;
    if (ran.status !== 200 || content?.stdout !== "hello\n") {
      return { client, sessionId, error: `exec ${ran.status}: ${ran.text.slice(0, 200)}` };
    }
    return { client, sessionId, ms: nowMs() - started };
  } catch (error) {
    return { client, error: error.message };
  }
}

/** Deletes every sample's session (the mode's end) and closes its connection. */
async function release(samples) {
  await Promise.all(
    samples.map(async ({ client, sessionId }) => {
      if (sessionId) await client.send("DELETE", `/sessions/${sessionId}`).catch(() => undefined);
      await client.close();
    }),
  );
}

/**
 * Reads the pools view every 250 ms until `ready(pools)` holds or PARK_WAIT_MS passed; then
 * says `short(pools)` and goes on. Answers the last pools read.
 */
async function waitForPools(admin, ready, short) {
  const deadline = nowMs() + PARK_WAIT_MS;
  let pools = [];
  while (nowMs() < deadline) {
    const answer = await admin.send("GET", "/admin/v1/pools");
    pools = answer.body?.items ?? [];
    if (answer.status === 200 && ready(pools)) return pools;
    await sleep(250);
  }
  progress(`${short(pools)} after ${PARK_WAIT_MS / 1000} s; measuring anyway`);
  return pools;
}

const parkedIn = (pools) => pools.reduce((sum, pool) => sum + (pool.parked ?? 0), 0);

/**
 * Waits until the deployment's pools hold `count` parked sandboxes, or as many as their places
 * leave beside minIdle (at its cap a pool's minIdle takes the places of parked ones).
 */
async function waitForParked(admin, count) {
  const room = (pools) => pools.reduce((sum, pool) => sum + pool.maxTotal - pool.minIdle, 0);
  const pools = await waitForPools(
    admin,
    (pools) => parkedIn(pools) >= Math.min(count, room(pools)),
    (pools) => `again: only ${parkedIn(pools)} of ${count} sandboxes parked`,
  );
  return parkedIn(pools);
}

/**
 * Waits until every pool holds its minIdle idle: a deployment's steady state before traffic,
 * not the seconds after its start while warm-up runs.
 */
async function waitForWarm(admin) {
  const short = (pools) => pools.filter((pool) => pool.idle < pool.minIdle);
  await waitForPools(
    admin,
    (pools) => short(pools).length === 0,
    (pools) =>
      `warm-up: ${short(pools)
        .map((pool) => `${pool.name} ${pool.idle} of ${pool.minIdle} idle`)
        .join(", ")}`,
  );
}

async function arrive(mode, url, token, burst) {
  if (mode === "sequential") {
    const samples = [];
    for (let i = 0; i < SEQUENTIAL; i++) samples.push(await timeToInteractive(url, token));
    return { label: `sequential ${SEQUENTIAL}`, samples };
  }
  if (mode === "staggered") {
    const pending = [];
    for (let i = 0; i < STAGGERED; i++) {
      pending.push(timeToInteractive(url, token));
      await sleep(STAGGER_MS);
    }
    return { label: `staggered ${STAGGERED} at ${1000 / STAGGER_MS}/s`, samples: await Promise.all(pending) };
  }
  const samples = await Promise.all(Array.from({ length: burst }, () => timeToInteractive(url, token)));
  return { label: mode === "burst" ? `burst of ${burst}` : `burst of ${burst} again, parked`, samples };
}

/** Runs `mode` on `workspace`; `{ label, stats, errors, parkedBefore? }`. */
export async function runTtiMode(mode, { url, token, admin, burst }) {
  const parkedBefore = mode === "again" ? await waitForParked(admin, burst) : undefined;
  if (mode !== "again") await waitForWarm(admin);
  const { label, samples } = await arrive(mode, url, token, burst);
  await release(samples);
  const times = samples.filter((s) => s.ms !== undefined).map((s) => s.ms);
  return {
    label,
    stats: summarize(times),
    errors: samples.filter((s) => s.error).map((s) => s.error),
    parkedBefore,
  };
}
