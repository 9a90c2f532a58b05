/**
 * Otari's session-per-request pattern, as many clients at once: each loops CreateSession ->
 * Execute `print(1)` -> DeleteSession until the time is up, on a keep-alive connection of its
 * own (client.mjs: undici, TCP_NODELAY), client i with workspace i mod the tokens given. A
 * refused or failed call is counted by its step, status and error code, never retried at
 * once: the client pauses briefly and starts its next cycle (its session, if it had one,
 * deleted first).
 */
import { createClient } from "./client.mjs";
import { nowMs } from "./timing.mjs";

/** The pause after a failed cycle: a refused client must not spin on a refusal. */
const FAILURE_PAUSE_MS = 100;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A failed step: its kind (step, then status and error code, or the transport error). */
class StepError extends Error {
  constructor(step, answer, transportError) {
    const cause = transportError
      ? (transportError.code ?? transportError.message)
      : `${answer.status} ${answer.body?.detail?.code ?? ""}`.trim();
    super(`${step} ${cause}`);
    this.step = step;
    this.detail = transportError ? transportError.message : answer.text.slice(0, 300);
  }
}

/** One request of `step`; a transport failure (a timeout, a reset) becomes a StepError too. */
async function send(step, client, method, path, body) {
  try {
    return await client.send(method, path, body);
  } catch (error) {
    throw new StepError(step, undefined, error);
  }
}

async function createSession(client) {
  const answer = await send("CreateSession", client, "POST", "/sessions", {});
  if (answer.status !== 201 || typeof answer.body?.session_id !== "string") {
    throw new StepError("CreateSession", answer);
  }
  return answer.body.session_id;
}

async function execPrintOne(client, sessionId) {
  const answer = await send("Execute", client, "POST", `/sessions/${sessionId}/exec`, {
    tool: "code_execution",
    input: { code: "print(1)" },
  });
  const content = answer.body?.result_block?.content;
  if (answer.status !== 200 || content?.return_code !== 0 || content?.stdout !== "1\n") {
    throw new StepError("Execute", answer);
  }
}

async function deleteSession(client, sessionId) {
  const answer = await send("DeleteSession", client, "DELETE", `/sessions/${sessionId}`);
  if (answer.status !== 204) throw new StepError("DeleteSession", answer);
}

/**
 * One row: `clients` clients over `tokens` for `durationMs`, each call given `callTimeoutMs`
 * (longer than the gateway may wait for a sandbox: a CreateSession given up on would leave
 * its session open, holding a sandbox through the rows after it). Returns the completed cycles,
 * the elapsed time (until the last client's last cycle ended), sessions/s, the latencies of
 * CreateSession and DeleteSession (ms, of completed cycles) and the failures by kind
 * (`{ count, example }`).
 *
 * Without `ratePerSecond` each client begins its next cycle as soon as its last ended (a
 * closed loop: the machine runs as fast as it can, and the latencies are those of a
 * saturated machine). With it the clients offer that many sessions a second in all, each
 * beginning a cycle every `clients / ratePerSecond` seconds (staggered): a client behind its
 * schedule begins at once, and its CreateSession is timed from when it was due, so the wait
 * it had for its own previous cycle counts (the latency an open stream of chat requests
 * would see, not only the requests that got through).
 */
export async function runChurn(url, tokens, { clients, durationMs, callTimeoutMs, ratePerSecond }) {
  const connections = Array.from({ length: clients }, (_, i) =>
    createClient(url, tokens[i % tokens.length], { timeoutMs: callTimeoutMs }),
  );
  const creates = [];
  const deletes = [];
  const failures = new Map();
  const fail = (error) => {
    const kind = error instanceof StepError ? error.message : `error ${error.message}`;
    const entry = failures.get(kind) ?? { count: 0, example: error.detail ?? error.message };
    entry.count++;
    failures.set(kind, entry);
  };
  const started = nowMs();
  const deadline = started + durationMs;
  let elapsedMs = 0;
  const periodMs = ratePerSecond === undefined ? 0 : (clients / ratePerSecond) * 1000;
  try {
    await Promise.all(
      connections.map(async (client, i) => {
        let due = started + (i * periodMs) / clients;
        while (nowMs() < deadline && due < deadline) {
          let sessionId;
          try {
            if (due > nowMs()) await sleep(due - nowMs());
            const t0 = periodMs > 0 ? Math.min(due, nowMs()) : nowMs();
            due += periodMs;
            sessionId = await createSession(client);
            const createMs = nowMs() - t0;
            await execPrintOne(client, sessionId);
            const t1 = nowMs();
            await deleteSession(client, sessionId);
            deletes.push(nowMs() - t1);
            creates.push(createMs);
          } catch (error) {
            fail(error);
            // A session whose Execute failed is still deleted (its DeleteSession failing is
            // already counted when that was the step that failed).
            if (sessionId !== undefined && error.step !== "DeleteSession") {
              await deleteSession(client, sessionId).catch(fail);
            }
            await sleep(FAILURE_PAUSE_MS);
          }
        }
      }),
    );
    elapsedMs = nowMs() - started;
  } finally {
    await Promise.all(connections.map((client) => client.close()));
  }
  return {
    clients,
    workspaces: Math.min(clients, tokens.length),
    sessions: creates.length,
    elapsedMs,
    // Paced: the cycles begun in the row's window over it (the offered rate when all got
    // through); a closed loop's over the time until its last cycle ended.
    perSecond: creates.length / ((periodMs > 0 ? durationMs : elapsedMs) / 1000),
    creates,
    deletes,
    failures,
  };
}
