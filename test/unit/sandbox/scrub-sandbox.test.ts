/**
 * The scrub between two sessions of a workspace, on real directories: everything in them goes,
 * even what user code locked away from itself, the mount points stay, and a scrub that cannot
 * vouch for a clean sandbox (a process outlived it) throws, so the gateway destroys it. The
 * reaper is a stand-in here; on a real container, test/integration/serve/sandbox-reuse.test.ts.
 */
import { chmod, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ScrubFailedError, scrubSandbox } from "../../../src/sandbox/sessions/scrub-sandbox.js";
import type { StrayReaper } from "../../../src/sandbox/tools/stray-reaper.js";
import { CodeLauncher } from "../../../src/sandbox/user-code/code-user.js";

/**
 * A stand-in reaper: after each reap, the next of `left` (the last one repeats) is still
 * alive; unknown processes are listed before the scrub unless the first is 0. `killCodeProcesses`
 * records the kernel's kill of the code's uid in the same list.
 */
function reaper(...left: number[]) {
  return reaperListing(left[0] !== 0, ...left);
}

/** The same, saying whether pids other than the known ones are listed (a zombie counts no thread). */
function reaperListing(unknownListed: boolean, ...left: number[]) {
  const calls: string[] = [];
  let looks = 0;
  const strays = {
    onlyKnownProcesses: () => !unknownListed,
    reap: () => {
      calls.push("reap");
      return 0;
    },
    count: () => left[Math.min(looks++, left.length - 1)]!,
  } as unknown as StrayReaper;
  const killCodeProcesses = async () => {
    calls.push("kill -9 -1");
  };
  return { strays, calls, killCodeProcesses };
}

describe("scrubSandbox", () => {
  let base: string;
  let root: string;
  let tmp: string;
  let outside: string;
  /** Empty IPC tables: the host's own (Postgres's shared memory) are never the test's to remove. */
  let procRoot: string;

  beforeEach(async () => {
    base = await mkdtemp(path.join(tmpdir(), "sandpool-scrub-"));
    [root, tmp, outside] = ["root", "tmp", "outside"].map((name) => path.join(base, name)) as [
      string,
      string,
      string,
    ];
    for (const dir of [root, tmp, outside]) await mkdir(dir);
    await writeFile(path.join(outside, "keep.txt"), "not the sandbox's");
    procRoot = path.join(base, "proc");
    await mkdir(path.join(procRoot, "sysvipc"), { recursive: true });
    for (const table of ["shm", "msg", "sem"]) {
      await writeFile(path.join(procRoot, "sysvipc", table), "       key      shmid perms\n");
    }
  });
  afterEach(async () => {
    await chmod(path.join(tmp, "locked"), 0o700).catch(() => undefined);
    await rm(base, { recursive: true, force: true });
  });

  it("empties every directory, locked and linked ones included, and keeps the directories", async () => {
    await mkdir(path.join(root, "old-session", "workspace"), { recursive: true });
    await writeFile(path.join(root, "old-session", "workspace", "secret.txt"), "secret");
    await writeFile(path.join(tmp, ".hidden"), "secret");
    await mkdir(path.join(tmp, "locked", "deep"), { recursive: true });
    await writeFile(path.join(tmp, "locked", "deep", "f"), "secret");
    await chmod(path.join(tmp, "locked"), 0o000);
    // A link out of the sandbox: removed itself, what it points to untouched.
    await symlink(outside, path.join(tmp, "escape"));
    const { strays, calls } = reaper(0);

    await scrubSandbox({
      strays,
      launcher: new CodeLauncher(),
      dirs: [root, tmp, path.join(base, "absent")],
      procRoot,
    });

    expect(calls).toEqual(["reap"]);
    expect(await readdir(root)).toEqual([]);
    expect(await readdir(tmp)).toEqual([]);
    expect(await readdir(outside)).toEqual(["keep.txt"]);
  });

  it("ends the code's processes at once, then waits for them to leave the process table, reaping again meanwhile", async () => {
    // The first look (2) decides on the kill; each reap is followed by another.
    const { strays, calls, killCodeProcesses } = reaper(2, 2, 1, 0);
    await scrubSandbox({ strays, launcher: new CodeLauncher(), dirs: [tmp], procRoot, killCodeProcesses });
    expect(calls).toEqual(["kill -9 -1", "reap", "reap", "reap"]);
  });

  it("starts no kill when the unknown pids listed are zombies with no live thread (an interpreter not reaped yet)", async () => {
    const { strays, calls, killCodeProcesses } = reaperListing(true, 0);
    await scrubSandbox({ strays, launcher: new CodeLauncher(), dirs: [tmp], procRoot, killCodeProcesses });
    expect(calls).toEqual(["reap"]);
  });

  it("starts no kill when only the server, its ancestors and the zygote are listed", async () => {
    const { strays, calls, killCodeProcesses } = reaper(0);
    await scrubSandbox({ strays, launcher: new CodeLauncher(), dirs: [tmp], procRoot, killCodeProcesses });
    expect(calls).toEqual(["reap"]);
  });

  it("fails, touching no file, when a process outlives the reap", async () => {
    await writeFile(path.join(tmp, "f"), "x");
    const { strays, killCodeProcesses } = reaper(1);
    await expect(
      scrubSandbox({ strays, launcher: new CodeLauncher(), dirs: [tmp], procRoot, killCodeProcesses }),
    ).rejects.toThrow(ScrubFailedError);
    expect(await readdir(tmp)).toEqual(["f"]);
  });
});
