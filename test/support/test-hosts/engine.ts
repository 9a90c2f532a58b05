/**
 * A test host's Docker engine: one dockerd inside the host's namespace, with its own data
 * root (kept between runs: the image cache), exec root, socket and pid file, and only what
 * a sandpool sandbox needs: no bridge, no iptables, no masquerading (sandboxes run with
 * NetworkMode none and are reached over a Unix socket in a bind-mounted directory). It starts
 * its own containerd below the exec root.
 */
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import Dockerode from "dockerode";
import { HostProcess } from "./host-process.js";

export interface EngineDirs {
  dataRoot: string;
  /** The host's run directory: socket, pid file, exec root, daemon.json. */
  runDir: string;
  cgroupParent: string;
}

export const engineSocket = (runDir: string) => path.join(runDir, "docker.sock");

export function engineClient(runDir: string, timeoutMs = 30_000): Dockerode {
  return new Dockerode({ socketPath: engineSocket(runDir), timeout: timeoutMs });
}

/** Starts dockerd in the namespace and waits (at most `timeoutMs`) until it answers. */
export async function startEngine(
  netns: string,
  dirs: EngineDirs,
  owner: Set<HostProcess>,
  label: string,
  timeoutMs: number,
): Promise<HostProcess> {
  await mkdir(dirs.dataRoot, { recursive: true, mode: 0o711 });
  await mkdir(dirs.runDir, { recursive: true, mode: 0o755 });
  // An empty configuration file of its own: /etc/docker/daemon.json is the main engine's.
  const config = path.join(dirs.runDir, "daemon.json");
  await writeFile(config, "{}\n");
  const dockerd = new HostProcess(
    netns,
    "dockerd",
    [
      `--config-file=${config}`,
      `--data-root=${dirs.dataRoot}`,
      `--exec-root=${path.join(dirs.runDir, "exec")}`,
      `--host=unix://${engineSocket(dirs.runDir)}`,
      `--pidfile=${path.join(dirs.runDir, "docker.pid")}`,
      "--bridge=none",
      "--iptables=false",
      "--ip-masq=false",
      "--exec-opt=native.cgroupdriver=cgroupfs",
      `--cgroup-parent=/${dirs.cgroupParent}`,
      "--shutdown-timeout=5",
      "--log-level=warn",
    ],
    { label },
    owner,
  );
  const client = engineClient(dirs.runDir, 2_000);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await client.ping().then(
        () => true,
        () => false,
      )
    ) {
      return dockerd;
    }
    if (!dockerd.running) {
      throw new Error(`${label} exited during start-up; last lines:\n${dockerd.tail()}`);
    }
    if (Date.now() > deadline) {
      await dockerd.kill("SIGKILL");
      throw new Error(`${label} did not answer within ${timeoutMs / 1000} s; last lines:\n${dockerd.tail()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Removes every container of the engine: the engine is the test host's alone. */
export async function removeAllContainers(docker: Dockerode): Promise<number> {
  const containers = await docker.listContainers({ all: true });
  await Promise.all(
    containers.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch((error: { statusCode?: number }) => {
          if (error.statusCode !== 404) throw error;
        }),
    ),
  );
  return containers.length;
}

export async function imageId(docker: Dockerode, tag: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(tag).inspect()).Id;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return undefined;
    throw error;
  }
}

/**
 * `docker save <tags> | docker -H <engine> load`, at most `timeoutMs`: the main engine's
 * images into the host's engine, without a registry.
 */
export async function loadImages(tags: string[], targetRunDir: string, timeoutMs: number): Promise<void> {
  const save = spawn("docker", ["save", ...tags], { stdio: ["ignore", "pipe", "pipe"] });
  const load = spawn("docker", ["-H", `unix://${engineSocket(targetRunDir)}`, "load", "-q"], {
    stdio: ["pipe", "ignore", "pipe"],
  });
  let errors = "";
  for (const child of [save, load]) {
    child.stderr.on("data", (chunk: Buffer) => {
      errors += chunk.toString();
    });
  }
  save.stdout.pipe(load.stdin);
  const exitOf = (child: typeof save | typeof load) =>
    new Promise<number | null>((resolve) => {
      child.on("error", (error) => {
        errors += `${error.message}\n`;
        resolve(null);
      });
      child.on("exit", (code) => resolve(code));
    });
  const timer = setTimeout(() => {
    save.kill("SIGKILL");
    load.kill("SIGKILL");
    errors += `not finished within ${timeoutMs / 1000} s\n`;
  }, timeoutMs);
  const [saveCode, loadCode] = await Promise.all([exitOf(save), exitOf(load)]);
  clearTimeout(timer);
  if (saveCode !== 0 || loadCode !== 0) {
    throw new Error(`docker save ${tags.join(" ")} | docker load failed: ${errors.trim()}`);
  }
}
