/**
 * A session's directories as the server needs them, whatever code in the sandbox did to
 * them: user code owns them (it runs as their owner) and may delete them (`rm -rf /`),
 * chmod them to 000, or replace one with a file or a symlink. Before the server serves the
 * session again each one is put back: a missing one is made, anything else in its place is
 * removed first (a symlink itself, never what it points to), and a directory the owner
 * cannot read, write and enter gets back mode 0700. The contents user code deleted stay
 * deleted. What cannot be put back is a 4xx, never a 5xx.
 *
 * Synchronous: before every call and file operation, a look at a few directories of the
 * sessions' root (a tmpfs in a sandbox) that is nearly always all there is to do, where each
 * asynchronous look was a trip through libuv's thread pool (a thread woken, a CPU waited for).
 */
import { chmodSync, lstatSync, mkdirSync, rmSync } from "node:fs";
import { SandpoolError } from "../../contract/error-codes.js";

const OWNER_ALL = 0o700;

/**
 * Puts back each directory in `chain`, outermost first (each must be the parent of the
 * next, or the sessions' root). Returns true when something had to be repaired.
 */
export async function repairDirectories(chain: readonly string[]): Promise<boolean> {
  let repaired = false;
  for (const dir of chain) {
    try {
      if (repairDirectory(dir)) repaired = true;
    } catch (error) {
      throw unrepairable(error);
    }
  }
  return repaired;
}

function repairDirectory(dir: string): boolean {
  const stats = lstatSync(dir, { throwIfNoEntry: false });
  if (stats?.isDirectory()) {
    if ((stats.mode & OWNER_ALL) === OWNER_ALL) return false;
    chmodSync(dir, OWNER_ALL);
    return true;
  }
  // Not recursive: a file or a symlink goes, never what a symlink points to.
  if (stats) rmSync(dir, { force: true });
  mkdirSync(dir, { mode: OWNER_ALL });
  return true;
}

function unrepairable(error: unknown): SandpoolError {
  const code = (error as NodeJS.ErrnoException).code ?? "unknown";
  if (code === "ENOSPC" || code === "EDQUOT") {
    return new SandpoolError(
      "file.too_large",
      "the sandbox's disk is full: its workspace, removed by code in the sandbox, cannot be recreated",
      { cause: error },
    );
  }
  return new SandpoolError(
    "path.invalid",
    `the session's workspace was removed or made unusable by code in the sandbox and cannot be recreated (${code})`,
    { cause: error },
  );
}
