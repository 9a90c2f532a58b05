/**
 * The file-system checkpoint store: private modes, one workspace never reaching another's
 * checkpoints, the per-workspace bounds, commit replacing an older checkpoint, and the sweep
 * of what a crash left half written.
 */
import { mkdtemp, readdir, rm, stat, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CheckpointBoundError } from "../../../src/hibernate/checkpoint-store.js";
import { FsCheckpointStore } from "../../../src/hibernate/fs-checkpoint-store.js";
import { reconcileCheckpoints } from "../../../src/hibernate/reconcile-checkpoints.js";

let root: string;
let store: FsCheckpointStore;

beforeEach(async () => {
  root = path.join(await mkdtemp(path.join(os.tmpdir(), "sp-store-")), "checkpoints");
  store = new FsCheckpointStore(root);
});
afterEach(async () => {
  await rm(path.dirname(root), { recursive: true, force: true });
});

async function save(workspace: string, sessionId: string, bytes: number, bounds = {}): Promise<string> {
  const dir = await store.begin(workspace, sessionId, bounds);
  await writeFile(path.join(dir, "checkpoint.img"), Buffer.alloc(bytes, 1));
  await store.commit(workspace, sessionId, dir);
  return (await store.locate(workspace, sessionId))!;
}

const modeOf = async (p: string) => ((await stat(p)).mode & 0o777).toString(8);

describe("FsCheckpointStore", () => {
  it("keeps every directory mode 0700 and reports the size it commits", async () => {
    const dir = await store.begin("acme", "s1", {});
    await writeFile(path.join(dir, "checkpoint.img"), Buffer.alloc(1000));
    expect(await store.commit("acme", "s1", dir)).toBe(1000);
    const located = (await store.locate("acme", "s1"))!;
    expect(await modeOf(root)).toBe("700");
    expect(await modeOf(path.dirname(located))).toBe("700");
    expect(await modeOf(located)).toBe("700");
    expect(await store.usage("acme")).toEqual({ checkpoints: 1, bytes: 1000 });
  });

  it("never hands one workspace's checkpoint to another, whatever the names", async () => {
    await save("acme", "s1", 10);
    expect(await store.locate("other", "s1")).toBeUndefined();
    // A workspace name that looks like a path stays inside its own hex-named directory.
    await save("../acme", "s1", 10);
    expect(await store.locate("acme", "s1")).not.toBe(await store.locate("../acme", "s1"));
    await expect(store.locate("acme", "../s1")).rejects.toThrow(/not a session id/);
    expect((await store.list()).map((c) => c.workspace).sort()).toEqual(["../acme", "acme"]);
  });

  it("bounds the whole store by bytes and its disk by a free floor, counting each refusal by reason", async () => {
    const refusals: string[] = [];
    const capped = new FsCheckpointStore(root, {
      limits: { maxBytes: 1000 },
      onRefused: (reason) => refusals.push(reason),
    });
    store = capped;
    await save("acme", "s1", 600);
    // Another workspace's checkpoint, and one being written, count against the store's cap.
    const writing = await capped.begin("other", "w1", {});
    await writeFile(path.join(writing, "checkpoint.img"), Buffer.alloc(400, 1));
    const refused = await capped.begin("third", "s9", {}).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CheckpointBoundError);
    expect(refused).toMatchObject({
      reason: "store_bytes",
      message: expect.stringMatching(/maxStoreBytes 1000/),
    });
    expect(await readdir(path.join(root, Buffer.from("third").toString("hex")))).toEqual([]);
    // Room comes back as checkpoints go.
    await capped.abandon(writing);
    await expect(capped.begin("third", "s9", {})).resolves.toContain(".begun-s9-");

    const floored = new FsCheckpointStore(root, {
      limits: { minFreeBytes: Number.MAX_SAFE_INTEGER },
      onRefused: (reason) => refusals.push(reason),
    });
    await expect(floored.begin("acme", "s2", {})).rejects.toMatchObject({
      reason: "disk_free",
      message: expect.stringMatching(/minFreeBytes/),
    });
    // The workspace's own bound is checked first, and counted as such.
    await expect(floored.begin("acme", "s2", { maxCheckpoints: 1 })).rejects.toMatchObject({
      reason: "workspace_sessions",
    });
    expect(refusals).toEqual(["store_bytes", "disk_free", "workspace_sessions"]);
  });

  it("takes its bounds from the hibernate settings (a floor of 0: none)", async () => {
    const settings = { checkpointDir: root, maxStoreBytes: 100, minFreeBytes: 0 };
    const counted: string[] = [];
    store = FsCheckpointStore.fromSettings(settings, {
      inc: ({ reason }, value = 1) => counted.push(`${reason} +${value}`),
    });
    // Every reason's series exists from the start.
    expect(counted).toEqual([
      "workspace_sessions +0",
      "workspace_bytes +0",
      "store_bytes +0",
      "disk_free +0",
    ]);
    await save("acme", "s1", 100);
    await expect(store.begin("acme", "s2", {})).rejects.toMatchObject({ reason: "store_bytes" });
    expect(counted.at(-1)).toBe("store_bytes +1");
    const unbounded = FsCheckpointStore.fromSettings({ ...settings, maxStoreBytes: 10_000 });
    await expect(unbounded.begin("acme", "s2", {})).resolves.toContain(".begun-s2-");
    const floored = FsCheckpointStore.fromSettings({
      ...settings,
      maxStoreBytes: 10_000,
      minFreeBytes: Number.MAX_SAFE_INTEGER,
    });
    await expect(floored.begin("acme", "s3", {})).rejects.toMatchObject({ reason: "disk_free" });
  });

  it("bounds a workspace by count and by bytes; a session's own older checkpoint is replaced, not counted", async () => {
    await save("acme", "s1", 600, { maxCheckpoints: 2, maxBytes: 1000 });
    await save("acme", "s2", 300, { maxCheckpoints: 2, maxBytes: 1000 });
    await expect(store.begin("acme", "s3", { maxCheckpoints: 2 })).rejects.toBeInstanceOf(
      CheckpointBoundError,
    );
    await expect(store.begin("acme", "s3", { maxBytes: 900 })).rejects.toThrow(/900/);
    // s1 again: its old checkpoint goes, so it fits.
    await save("acme", "s1", 50, { maxCheckpoints: 2, maxBytes: 1000 });
    expect(await store.usage("acme")).toEqual({ checkpoints: 2, bytes: 350 });
    // Another workspace has bounds of its own.
    await save("other", "s9", 10, { maxCheckpoints: 1 });
  });

  it("counts checkpoints being written against the bound: of concurrent begins, only those that fit", async () => {
    const begun = await Promise.allSettled(
      ["a", "b", "c", "d"].map((session) => store.begin("busy", session, { maxCheckpoints: 2 })),
    );
    expect(begun.filter((result) => result.status === "fulfilled")).toHaveLength(2);
    expect(begun.filter((result) => result.status === "rejected")).toHaveLength(2);
    // An abandoned one frees its place.
    const first = begun.find((result) => result.status === "fulfilled") as PromiseFulfilledResult<string>;
    await store.abandon(first.value);
    await expect(store.begin("busy", "e", { maxCheckpoints: 2 })).resolves.toContain(".begun-e-");
  });

  it("deletes a checkpoint, and an absent one is no error", async () => {
    await save("acme", "s1", 10);
    await store.delete("acme", "s1");
    await store.delete("acme", "s1");
    expect(await store.locate("acme", "s1")).toBeUndefined();
    expect(await store.usage("acme")).toEqual({ checkpoints: 0, bytes: 0 });
  });

  it("sweeps directories begun and never committed (a crash midway), not fresh ones or committed ones", async () => {
    await save("acme", "s1", 10);
    const stale = await store.begin("acme", "s2", {});
    const fresh = await store.begin("acme", "s3", {});
    const old = new Date(Date.now() - 60 * 60_000);
    await utimes(stale, old, old);
    expect(await store.list()).toHaveLength(1);
    expect(await store.sweepUncommitted(Date.now() - 10 * 60_000)).toBe(1);
    const left = await readdir(path.dirname(stale));
    expect(left).toContain(path.basename(fresh));
    expect(left).not.toContain(path.basename(stale));
    expect(await store.locate("acme", "s1")).toBeDefined();
  });

  it("reconciliation leaves a save that has written for minutes alone, and sweeps one a crash left", async () => {
    const writing = await store.begin("acme", "slow", {});
    const crashed = await store.begin("acme", "crashed", {});
    const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000);
    await utimes(writing, minutesAgo(3), minutesAgo(3)); // a large tar still being written
    await utimes(crashed, minutesAgo(11), minutesAgo(11));
    const noLeases = { getLease: async () => undefined };
    expect(await reconcileCheckpoints(noLeases, store, Date.now())).toBe(1);
    const left = await readdir(path.dirname(writing));
    expect(left).toContain(path.basename(writing));
    expect(left).not.toContain(path.basename(crashed));
  });

  it("commits only a directory begun for that session in that workspace", async () => {
    const dir = await store.begin("acme", "s1", {});
    await expect(store.commit("acme", "s2", dir)).rejects.toThrow(/not a checkpoint directory/);
    await expect(store.commit("other", "s1", dir)).rejects.toThrow(/not a checkpoint directory/);
    await store.abandon(dir);
    expect(await readdir(path.dirname(dir))).toEqual([]);
  });
});
