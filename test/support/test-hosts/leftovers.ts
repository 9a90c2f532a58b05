/**
 * What test hosts leave on the machine if they are not closed (a killed test runner, a
 * crash): namespaces and the processes in them, the root namespace's uplink, processes
 * started with our directories on their command line (a dockerd whose namespace was deleted
 * by hand), container processes in our cgroups, and mounts below our directories.
 *
 * findLeftovers() lists them (the smoke test asserts the list is empty after close());
 * sweepLeftovers() removes them, at start-up, before a run creates anything. Only a run that
 * holds the lock sweeps, so a live run's hosts are never touched.
 */
import { readFileSync } from "node:fs";
import { readdir, readFile, rm, rmdir } from "node:fs/promises";
import path from "node:path";
import { LINK_PREFIX, NAMESPACE_PREFIX } from "./layout.js";
import { ip, runCommand } from "./run-command.js";

const CGROUP_ROOT = "/sys/fs/cgroup";

export interface Leftovers {
  namespaces: string[];
  links: string[];
  /** pid and command line. */
  processes: { pid: number; command: string }[];
  cgroups: string[];
  mounts: string[];
}

export interface LeftoverScope {
  runDir: string;
  cacheDir: string;
  /** Only this run's namespaces and links (default: every run's); processes, cgroups and mounts are any run's. */
  run?: string;
}

export async function findLeftovers(scope: LeftoverScope): Promise<Leftovers> {
  const namespaces = await ourNamespaces(scope);
  const links = (await ip(["-o", "link", "show"]))
    .split("\n")
    .map((line) => line.split(":")[1]?.trim().split("@")[0] ?? "")
    .filter((name) => name.startsWith(LINK_PREFIX + (scope.run ?? "")));
  const pids = new Set<number>();
  for (const namespace of namespaces) for (const pid of await namespacePids(namespace)) pids.add(pid);
  for (const pid of await pidsMentioning([scope.runDir, scope.cacheDir])) pids.add(pid);
  const cgroups = await ourCgroups();
  for (const cgroup of cgroups) for (const pid of await cgroupPids(cgroup)) pids.add(pid);
  const processes = await Promise.all(
    [...pids]
      .filter((pid) => pid !== process.pid)
      .map(async (pid) => ({ pid, command: await commandOf(pid) })),
  );
  const mounts = await mountsBelow([scope.runDir, scope.cacheDir]);
  return { namespaces, links, processes: processes.filter((p) => p.command !== ""), cgroups, mounts };
}

export function isEmpty(leftovers: Leftovers): boolean {
  return Object.values(leftovers).every((list) => list.length === 0);
}

/** Removes everything findLeftovers reports, and the per-host run directories. */
export async function sweepLeftovers(scope: LeftoverScope, log: (line: string) => void): Promise<void> {
  const found = await findLeftovers(scope);
  if (isEmpty(found)) return;
  log(
    `sweeping what an earlier run left: ${found.namespaces.length} namespaces, ${found.links.length} links, ` +
      `${found.processes.length} processes, ${found.cgroups.length} cgroups, ${found.mounts.length} mounts`,
  );
  await killAll(found.processes.map((p) => p.pid));
  await unmountAll(found.mounts);
  for (const namespace of found.namespaces) await ip(["netns", "del", namespace]).catch(() => undefined);
  for (const link of found.links) await ip(["link", "del", link]).catch(() => undefined);
  await removeCgroups(found.cgroups);
  for (const entry of await readdir(scope.runDir).catch(() => [] as string[])) {
    if (/^\d+$/.test(entry)) await rm(path.join(scope.runDir, entry), { recursive: true, force: true });
  }
  const after = await findLeftovers(scope);
  if (!isEmpty(after)) {
    throw new Error(`could not remove what an earlier run of the test hosts left: ${JSON.stringify(after)}`);
  }
}

/** SIGKILLs the pids and waits (at most 10 s) until they are gone. */
export async function killAll(pids: number[]): Promise<void> {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + 10_000;
  while (pids.some(isAlive)) {
    if (Date.now() > deadline)
      throw new Error(`processes ${pids.filter(isAlive).join(", ")} survived SIGKILL`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** True for a live process; a zombie (exited, not yet reaped by its parent) counts as gone. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // Field 3 of /proc/<pid>/stat, after the command in parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

export async function ourNamespaces(scope: { run?: string }): Promise<string[]> {
  return (await ip(["netns", "list"]))
    .split("\n")
    .map((line) => line.split(" ")[0] ?? "")
    .filter((name) => name.startsWith(NAMESPACE_PREFIX + (scope.run ?? "")));
}

export async function namespacePids(namespace: string): Promise<number[]> {
  const { stdout } = await runCommand("ip", ["netns", "pids", namespace], { allowFailure: true });
  return stdout
    .split("\n")
    .filter((line) => /^\d+$/.test(line.trim()))
    .map(Number);
}

/** Processes whose command line names one of our directories (dockerd, its containerd). */
async function pidsMentioning(directories: string[]): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const command = await commandOf(Number(entry));
    if (directories.some((dir) => command.includes(`${dir}/`) || command.includes(`${dir} `))) {
      pids.push(Number(entry));
    }
  }
  return pids;
}

async function commandOf(pid: number): Promise<string> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, "utf8")).replaceAll("\0", " ").trim();
  } catch {
    return "";
  }
}

/**
 * Our cgroups (the engines' cgroup parents, or only the one named `parent`, and the
 * containers below them), deepest first.
 */
export async function ourCgroups(parent?: string): Promise<string[]> {
  const found: string[] = [];
  const controllers = await readdir(CGROUP_ROOT).catch(() => [] as string[]);
  // cgroup v1 has a directory per controller; v2 is one tree at the root.
  const roots = [CGROUP_ROOT, ...controllers.map((c) => path.join(CGROUP_ROOT, c))];
  for (const root of roots) {
    for (const entry of await readdir(root).catch(() => [] as string[])) {
      if (parent === undefined ? !entry.startsWith(NAMESPACE_PREFIX) : entry !== parent) continue;
      const dir = path.join(root, entry);
      const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const child of children) if (child.isDirectory()) found.push(path.join(dir, child.name));
      found.push(dir);
    }
  }
  return found;
}

export async function cgroupPids(cgroup: string): Promise<number[]> {
  const text = await readFile(path.join(cgroup, "cgroup.procs"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => /^\d+$/.test(line))
    .map(Number);
}

/** Kills every process in the cgroups (containers whose engine died), then removes them. */
export async function clearCgroups(cgroups: string[]): Promise<void> {
  const pids: number[] = [];
  for (const cgroup of cgroups) pids.push(...(await cgroupPids(cgroup)));
  await killAll(pids);
  await removeCgroups(cgroups);
}

export async function removeCgroups(cgroups: string[]): Promise<void> {
  for (const cgroup of cgroups) await rmdir(cgroup).catch(() => undefined);
}

/** Mount points below the directories, deepest first (from /proc/self/mountinfo). */
export async function mountsBelow(directories: string[]): Promise<string[]> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  return info
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => directories.some((dir) => point.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
}

export async function unmountAll(mounts: string[]): Promise<void> {
  for (const point of mounts) await runCommand("umount", ["-l", point], { allowFailure: true });
}
