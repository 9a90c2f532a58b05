/**
 * The direct baseline as `sandpool serve` runs sandboxes: one container of the sandbox image,
 * made from the docker runtime's own container spec (src/runtime/docker/container-spec.ts:
 * no network, its CPU and memory limits, the server's flags, stray processes reaped after
 * every call), reached over its Unix socket. One difference only: the runtime gives each
 * container one session; this one takes many, so the direct path and the relay in front of
 * it can hold as many sessions as the bench's clients, as serve's containers do together.
 * A process-runtime `sandpool sandbox` server skips the box's per-call work, which serve's
 * path would then be charged for as the gateway's own.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import Docker from "dockerode";
import { buildContainerSpec } from "../../../dist/runtime/docker/container-spec.js";
import {
  dockerRuntimeOptionsSchema,
  SANDBOX_SOCKET_NAME,
} from "../../../dist/runtime/docker/docker-runtime-options.js";
import { createClient } from "./client.mjs";
import { nowMs } from "./timing.mjs";

const MAX_SESSIONS = "64";

/**
 * The docker runtime's own container spec for a bench's sandbox of `image` whose socket is
 * in `socketDir`, its sessions widened to MAX_SESSIONS (the runtime gives each container one).
 */
export function benchContainerSpec(image, { label, sandboxId, socketDir }) {
  const options = dockerRuntimeOptionsSchema.parse({
    deployment: `bench-${label}-${randomBytes(4).toString("hex")}`,
    socketDir,
    execTimeoutCeilingSeconds: 300,
    maxFileBytes: 16 * 1024 * 1024,
  });
  const spec = buildContainerSpec(options, {
    sandboxId,
    pool: `bench-${label}`,
    image,
    resourceClass: options.resourceClasses.standard,
    resourceClassName: "standard",
    engineHost: "local",
    socketDir,
    egress: false,
  });
  const at = spec.Cmd.indexOf("--max-sessions");
  if (at < 0) throw new Error("the container spec has no --max-sessions flag to widen");
  spec.Cmd[at + 1] = MAX_SESSIONS;
  return spec;
}

/** `{ url: "unix://…/sandbox.sock", pid, stop() }`; `pid` is the server's (host) process id. */
export async function startSandboxContainer(image, timeoutMs) {
  const docker = new Docker();
  const socketDir = await mkdtemp(path.join(tmpdir(), "sandpool-bench-direct-"));
  await chmod(socketDir, 0o777); // the server (uid 10001) makes its socket here
  const spec = benchContainerSpec(image, { label: "direct", sandboxId: "direct", socketDir });
  const container = await docker.createContainer(spec);
  const stop = async () => {
    await container.remove({ force: true }).catch(() => undefined);
    await rm(socketDir, { recursive: true, force: true });
  };
  try {
    await container.start();
    const url = `unix://${path.join(socketDir, SANDBOX_SOCKET_NAME)}`;
    await untilHealthy(url, timeoutMs);
    return { url, pid: await serverPid(container), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function untilHealthy(url, timeoutMs) {
  const deadline = nowMs() + timeoutMs;
  for (;;) {
    const client = createClient(url);
    const answer = await client.send("GET", "/health").catch(() => undefined);
    await client.close();
    if (answer?.status === 200) return;
    if (nowMs() > deadline) throw new Error(`the sandbox container did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The sandbox server's host pid: the child of the container's init (tini). */
async function serverPid(container) {
  const { State } = await container.inspect();
  const children = await readFile(`/proc/${State.Pid}/task/${State.Pid}/children`, "utf8");
  const [pid] = children.trim().split(/\s+/).map(Number);
  if (!Number.isSafeInteger(pid)) throw new Error("the sandbox container's server process was not found");
  return pid;
}

/**
 * `count` containers at once: `{ urls, pids, url, pid, stop() }` (`url` and `pid`: the first
 * one's, for a path measured with one session).
 */
export async function startSandboxContainers(image, count, timeoutMs) {
  const started = await Promise.allSettled(
    Array.from({ length: count }, () => startSandboxContainer(image, timeoutMs)),
  );
  const boxes = started.filter((s) => s.status === "fulfilled").map((s) => s.value);
  const stop = () => Promise.all(boxes.map((box) => box.stop()));
  const failed = started.find((s) => s.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return {
    urls: boxes.map((b) => b.url),
    pids: boxes.map((b) => b.pid),
    url: boxes[0].url,
    pid: boxes[0].pid,
    stop,
  };
}
