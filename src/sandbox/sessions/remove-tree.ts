/**
 * Deletes a session's directory tree, including what user code made undeletable to a
 * plain `rm -rf` by taking its own permissions away (`chmod 000 some/dir`): the server
 * works on the files as their owner, so it gives each directory back its owner's bits
 * (top down, never following a symlink) and deletes again.
 */
import { type Dirent, readdirSync, rmSync } from "node:fs";
import { chmod, lstat, readdir, rm } from "node:fs/promises";
import path from "node:path";

/**
 * A tree of at most this many entries is removed synchronously: a session's directory
 * usually holds its workspace, its uploads and a few files, and each asynchronous removal
 * step was a trip through libuv's thread pool (a thread woken, a CPU waited for) on the way
 * to the sandbox's next session. A larger tree is removed asynchronously, so the server
 * answers meanwhile.
 */
const SYNC_ENTRIES = 64;

export async function removeTree(dir: string): Promise<void> {
  if (smallTree(dir, SYNC_ENTRIES)) {
    try {
      rmSync(dir, { recursive: true, force: true });
      return;
    } catch {
      // Removed below, where a directory user code chmod-ed is given back its bits.
    }
  }
  try {
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM") throw error;
    await reopenDirectories(dir);
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

async function reopenDirectories(dir: string): Promise<void> {
  const stats = await lstat(dir).catch(() => undefined);
  if (!stats?.isDirectory()) return;
  await chmod(dir, 0o700).catch(() => undefined);
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) await reopenDirectories(path.join(dir, name));
}

/** True when `dir` (not followed if a symlink) holds at most `budget` entries in all, and all could be listed. */
function smallTree(dir: string, budget: number): boolean {
  let left = budget;
  const fits = (current: string): boolean => {
    let entries: Dirent[];
    try {
      entries = readdirSync(current, { withFileTypes: true });
    } catch (error) {
      // Gone, or not a directory: nothing to walk. Unreadable: the slow path's business.
      const code = (error as NodeJS.ErrnoException).code;
      return code === "ENOENT" || code === "ENOTDIR";
    }
    left -= entries.length;
    if (left < 0) return false;
    return entries.every((entry) => !entry.isDirectory() || fits(path.join(current, entry.name)));
  };
  return fits(dir);
}
