/**
 * Deletes a session's directory tree, including what user code made undeletable to a
 * plain `rm -rf` by taking its own permissions away (`chmod 000 some/dir`): the server
 * works on the files as their owner, so it gives each directory back its owner's bits
 * (top down, never following a symlink) and deletes again.
 */
import { chmod, lstat, readdir, rm } from "node:fs/promises";
import path from "node:path";

export async function removeTree(dir: string): Promise<void> {
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
