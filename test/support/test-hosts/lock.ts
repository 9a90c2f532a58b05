/**
 * One run of test hosts at a time on a machine: they share the fixed image cache, the
 * subnet and the start-up sweep, which must never remove a live run's hosts. The lock is a
 * file holding the owner's pid; a lock whose owner is dead (a killed run) is taken over.
 */
import { mkdir, readFile, unlink, writeFile } from "node:fs/promises";
import { lockFile } from "./layout.js";
import { isAlive } from "./leftovers.js";

export interface RunLock {
  release(): Promise<void>;
  /** True once a later run of this process took the lock over (and swept this run away). */
  superseded(): Promise<boolean>;
}

export async function acquireRunLock(
  runDir: string,
  run: string,
  timeoutMs: number,
  log: (line: string) => void,
): Promise<RunLock> {
  const file = lockFile(runDir);
  await mkdir(runDir, { recursive: true, mode: 0o755 });
  const deadline = Date.now() + timeoutMs;
  let announced = false;
  for (;;) {
    try {
      await writeFile(file, JSON.stringify({ pid: process.pid, run }), { flag: "wx" });
      return {
        release: async () => {
          const owner = await readOwner(file);
          if (owner?.pid === process.pid && owner.run === run) await unlink(file).catch(() => undefined);
        },
        superseded: async () => {
          const owner = await readOwner(file);
          return owner !== undefined && owner.run !== run;
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const owner = await readOwner(file);
    // Its run is dead, or was started by this very process and never closed (or the file is
    // half-written garbage): take it over; the sweep then removes what that run left.
    if (!owner || !isAlive(owner.pid) || owner.pid === process.pid) {
      await unlink(file).catch(() => undefined);
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `another run of the test hosts (pid ${owner.pid}, run ${owner.run}) still holds ${file} ` +
          `after ${timeoutMs / 1000} s`,
      );
    }
    if (!announced) log(`waiting for another run of the test hosts to finish (pid ${owner.pid})`);
    announced = true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function readOwner(file: string): Promise<{ pid: number; run: string } | undefined> {
  try {
    const owner = JSON.parse(await readFile(file, "utf8")) as { pid?: unknown; run?: unknown };
    return typeof owner.pid === "number" && typeof owner.run === "string"
      ? { pid: owner.pid, run: owner.run }
      : undefined;
  } catch {
    return undefined;
  }
}
