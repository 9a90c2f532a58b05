/**
 * One sandbox container of the real spec (sandbox-container.mjs's), watched from outside:
 * its cgroup's CPU (cpuacct.usage, every process of the container, the exited ones and the
 * runtime's own init included) and its server's and zygote's own (schedstat of their
 * threads). For benches that ask where a sandbox's CPU goes, phase by phase.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import Docker from "dockerode";
import { SANDBOX_SOCKET_NAME } from "../../../dist/runtime/docker/docker-runtime-options.js";
import { createClient } from "./client.mjs";
import { cpuMsOf } from "./cpu-time.mjs";
import { benchContainerSpec } from "./sandbox-container.mjs";
import { nowMs } from "./timing.mjs";

const CGROUP_ROOTS = ["/sys/fs/cgroup/cpuacct/docker", "/sys/fs/cgroup/cpu,cpuacct/docker"];

/** The container's CPU in ms so far, from its cgroup (v1 cgroupfs, or v2 under system.slice). */
export async function cgroupCpuMs(id) {
  for (const root of CGROUP_ROOTS) {
    const text = await readFile(`${root}/${id}/cpuacct.usage`, "utf8").catch(() => undefined);
    if (text !== undefined) return Number(text) / 1e6;
  }
  const stat = await readFile(`/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`, "utf8").catch(
    () => undefined,
  );
  const usec = stat && /^usage_usec (\d+)$/m.exec(stat)?.[1];
  if (usec) return Number(usec) / 1e3;
  throw new Error(`no cgroup CPU counter found for container ${id.slice(0, 12)}`);
}

/**
 * Waits until the container's CPU stops moving: `quietMs` without a change (what an answer
 * left running, a fork in the background, an interpreter's exit, has ended). Its reading then.
 */
export async function settledCpuMs(id, { quietMs = 15, pollMs = 3, maxMs = 5_000 } = {}) {
  const deadline = nowMs() + maxMs;
  let last = await cgroupCpuMs(id);
  let since = nowMs();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    const now = await cgroupCpuMs(id);
    if (now !== last) {
      last = now;
      since = nowMs();
    } else if (nowMs() - since >= quietMs || nowMs() > deadline) {
      return last;
    }
  }
}

/**
 * Creates and starts one container of `image` as sandpool serve would (its `--max-sessions`
 * aside, widened as sandbox-container.mjs does), measuring its start: `{ id, url, client,
 * startCpuMs: { ready, settled }, pids: { server, zygote }, stop() }`. `ready`: the cgroup's
 * CPU when /health first answers; `settled`: once nothing in it runs (its zygote is ready).
 */
export async function startWatchedContainer(
  image,
  { timeoutMs = 30_000, nodeFlags = [], keepSocketDir = false } = {},
) {
  const docker = new Docker();
  const socketDir = await mkdtemp(path.join(tmpdir(), "sandpool-bench-cycle-"));
  await chmod(socketDir, 0o777);
  const spec = benchContainerSpec(image, {
    label: "cycle",
    sandboxId: `cycle-${randomBytes(4).toString("hex")}`,
    socketDir,
  });
  // Node's own flags (a profile: `--cpu-prof --cpu-prof-dir=/run/sandpool`) go before the script.
  if (nodeFlags.length > 0 && spec.Cmd[0] === "node") spec.Cmd.splice(1, 0, ...nodeFlags);
  const container = await docker.createContainer(spec);
  const id = container.id;
  let client;
  const stop = async () => {
    await client?.close().catch(() => undefined);
    if (keepSocketDir) await container.stop({ t: 5 }).catch(() => undefined);
    await container.remove({ force: true }).catch(() => undefined);
    if (!keepSocketDir) await rm(socketDir, { recursive: true, force: true });
  };
  try {
    await container.start();
    const url = `unix://${path.join(socketDir, SANDBOX_SOCKET_NAME)}`;
    const deadline = nowMs() + timeoutMs;
    for (;;) {
      const probe = createClient(url);
      const answer = await probe.send("GET", "/health").catch(() => undefined);
      await probe.close();
      if (answer?.status === 200) break;
      if (nowMs() > deadline) throw new Error(`${image} did not answer within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const ready = await cgroupCpuMs(id);
    const settled = await settledCpuMs(id, { quietMs: 150, pollMs: 10, maxMs: 10_000 });
    const pids = await serverAndZygote(container);
    client = createClient(url);
    return { id, url, client, socketDir, startCpuMs: { ready, settled }, pids, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Host pids of the server (tini's child) and its zygote (the server's python3 child), if any. */
async function serverAndZygote(container) {
  const { State } = await container.inspect();
  const childrenOf = async (pid) =>
    (await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => ""))
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  const [server] = await childrenOf(State.Pid);
  let zygote;
  for (const pid of await childrenOf(server)) {
    const comm = (await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "")).trim();
    if (comm.startsWith("python")) zygote = pid;
  }
  return { server, zygote };
}

/** CPU ms of the server's and zygote's own threads now (exited children not included). */
export async function processCpuMs(pids) {
  return {
    server: pids.server ? await cpuMsOf(pids.server).catch(() => 0) : 0,
    zygote: pids.zygote ? await cpuMsOf(pids.zygote).catch(() => 0) : 0,
  };
}
