/** Starts the no-logic relay (bare-relay.mjs) in front of `upstreamUrl`, as a child process. */
import { fileURLToPath } from "node:url";
import { spawnTracked, stopProcess, tailOf, waitForLine } from "./process.mjs";

const relayPath = fileURLToPath(new URL("./bare-relay.mjs", import.meta.url));

export async function startRelay(upstreamUrl, timeoutMs) {
  const child = spawnTracked(process.execPath, [relayPath, upstreamUrl]);
  const log = tailOf(child);
  const match = await waitForLine(child, /^relay listening on (http:\/\/\S+)/, timeoutMs);
  child.stdout.resume();
  return { url: match[1], pid: child.pid, log, stop: () => stopProcess(child, 5_000) };
}
