/** What a container that failed to start says about why: its state, exit code and last output. */
import type Dockerode from "dockerode";
import { dockerStatusOf } from "./docker-api-errors.js";
import type { DockerEngine } from "./docker-engine.js";

/** Why a starting sandbox's container is not running (its state and last output), or undefined if it is. */
export async function whyNotRunning(
  engine: DockerEngine,
  container: Dockerode.Container,
): Promise<string | undefined> {
  try {
    const info = await engine.call(() => container.inspect());
    if (info.State.Running) return undefined;
    const logs = await tailLogs(container);
    return `status ${info.State.Status}, exit code ${info.State.ExitCode}${info.State.OOMKilled ? " (out of memory)" : ""}${logs ? `; last output:\n${logs}` : ""}`;
  } catch (error) {
    if (dockerStatusOf(error) === 404) return "the container was removed";
    return undefined;
  }
}

async function tailLogs(container: Dockerode.Container): Promise<string> {
  try {
    const raw = await container.logs({ stdout: true, stderr: true, tail: 20, follow: false });
    return demuxLogs(Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw))).slice(-2_000);
  } catch {
    return "";
  }
}

/** Docker multiplexes stdout/stderr of a container without a TTY: 8-byte frame headers. */
function demuxLogs(raw: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length && raw[offset]! <= 2 && raw.readUInt16BE(offset + 1) === 0) {
    const size = raw.readUInt32BE(offset + 4);
    parts.push(raw.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  if (offset === 0) return raw.toString("utf8");
  return Buffer.concat(parts).toString("utf8");
}
