/**
 * Starts the bundled sandbox server (dist/sandbox.mjs: the program the image and the
 * process runtime run) on a free loopback port with a fresh root, for benches.
 */
import { fileURLToPath } from "node:url";
import { makeTempDir, removeTempDir, spawnTracked, stopProcess, tailOf, waitForLine } from "./process.mjs";
import { nowMs } from "./timing.mjs";

export const sandboxProgram = fileURLToPath(new URL("../../../dist/sandbox.mjs", import.meta.url));
const LISTENING = /^sandpool sandbox listening on (http:\/\/\S+)/;

/**
 * Resolves once the server prints its listening line: `url`, `start` (nowMs() at spawn),
 * `listeningMs`, `log()` (the tail of its log) and `stop()`, which throws when the server
 * does not exit cleanly on SIGTERM.
 */
export async function startSandboxServer(python, timeoutMs) {
  const root = await makeTempDir("sandpool-bench-sandbox-");
  const start = nowMs();
  const child = spawnTracked(process.execPath, [
    sandboxProgram,
    "sandbox",
    "--host",
    "127.0.0.1",
    "--port",
    "0",
    "--root",
    root,
    "--python",
    python,
  ]);
  const log = tailOf(child);
  const ready = waitForLine(child, LISTENING, timeoutMs);
  child.stdout.resume();
  const match = await ready;
  return {
    url: match[1],
    pid: child.pid,
    start,
    listeningMs: nowMs() - start,
    log,
    stop: async () => {
      const exit = await stopProcess(child, 5_000);
      await removeTempDir(root);
      if (exit.forced || exit.code !== 0) {
        throw new Error(`sandbox server did not exit cleanly on SIGTERM: ${JSON.stringify(exit)}\n${log()}`);
      }
    },
  };
}

/** POST /sessions; the new session's id, or an error naming the answer. */
export async function createSession(client) {
  const answer = await client.send("POST", "/sessions", {});
  if (answer.status !== 201 || typeof answer.body?.session_id !== "string") {
    throw new Error(`POST /sessions answered ${answer.status}: ${answer.text}`);
  }
  return answer.body.session_id;
}
