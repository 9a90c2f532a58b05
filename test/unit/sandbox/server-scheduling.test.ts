/**
 * The scrub's look at the server's own scheduling (src/sandbox/sessions/server-scheduling.ts):
 * user code may renice, re-pin or re-schedule the server's threads (their effective uid is
 * its own), and the scrub must see any of it. On a stand-in /proc/self with two threads.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { changedScheduling, serverScheduling } from "../../../src/sandbox/sessions/server-scheduling.js";

/** A stat line whose nice (field 19) and policy (field 41) are given. */
function statLine(tid: number, nice: number, policy: number): string {
  const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
  fields[0] = "S";
  fields[16] = String(nice);
  fields[38] = String(policy);
  return `${tid} (node (main)) ${fields.join(" ")}\n`;
}

describe("server scheduling", () => {
  let self: string;
  async function thread(tid: number, nice: number, policy: number, cpus: string) {
    const dir = path.join(self, "task", String(tid));
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, "stat"), statLine(tid, nice, policy));
    await writeFile(path.join(dir, "status"), `Name:\tnode\nCpus_allowed_list:\t${cpus}\n`);
  }
  beforeEach(async () => {
    self = await mkdtemp(path.join(tmpdir(), "sandpool-self-"));
    await thread(7, 0, 0, "0-1");
    await thread(12, 0, 0, "0-1");
  });
  afterEach(() => rm(self, { recursive: true, force: true }));

  it("reads the main thread's values and finds nothing changed", () => {
    const baseline = serverScheduling(self);
    expect(baseline).toEqual({ nice: "0", policy: "0", cpus: "0-1" });
    expect(changedScheduling(baseline!, self)).toBeUndefined();
  });

  it.each([
    ["reniced", 19, 0, "0-1", "nice 19"],
    ["re-scheduled (SCHED_IDLE)", 0, 5, "0-1", "policy 5"],
    ["re-pinned", 0, 0, "0", "cpus 0"],
  ])("says so when a thread was %s", async (_how, nice, policy, cpus, said) => {
    const baseline = serverScheduling(self)!;
    await thread(12, nice, policy, cpus);
    expect(changedScheduling(baseline, self)).toContain(said);
  });
});
