/**
 * RuntimePoolSizes around a stand-in repository: sizes in force (override or configured),
 * validation (every problem at once, minIdle <= maxTotal once applied, 404 for an unknown
 * pool), null back to configured, another replica following the announcement, the stale
 * reload, and rows of pools the configuration no longer has ignored.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { POOL_SIZES_CHANNEL, RuntimePoolSizes } from "../../../src/pool/pool-sizes.js";
import type { PoolSpec } from "../../../src/runtime/sandbox-runtime.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import type {
  PoolSizeOverride,
  PoolSizeRepository,
  StoredPoolSizes,
} from "../../../src/store/sql/pool-size-repository.js";

const log = pino({ level: "silent" });
const spec = (name: string, minIdle: number, maxTotal: number): PoolSpec => ({
  name,
  image: "img",
  resourceClass: "standard",
  minIdle,
  maxTotal,
  warmupConcurrency: 2,
  coldStartTimeoutMs: 30_000,
});
const pools = [spec("small", 1, 4), spec("big", 2, 10)];

/** Rows in a map, updates applied like the real repository (decide, then store, then audit). */
function fakeRepository() {
  const rows = new Map<string, PoolSizeOverride>();
  const audits: { pool: string; actor: string; detail: Record<string, unknown> }[] = [];
  const repository = {
    async list() {
      return [...rows.values()];
    },
    async update(
      pool: string,
      actor: string,
      decide: (before: StoredPoolSizes) => { sizes: StoredPoolSizes; detail: Record<string, unknown> },
    ) {
      const row = rows.get(pool);
      const { sizes, detail } = decide({ minIdle: row?.minIdle ?? null, maxTotal: row?.maxTotal ?? null });
      rows.set(pool, { pool, ...sizes, updatedAt: new Date(), updatedBy: actor });
      audits.push({ pool, actor, detail });
    },
  };
  return { rows, audits, repository: repository as unknown as PoolSizeRepository };
}

async function replica(repository: PoolSizeRepository, store: MemoryCoordinationStore, now?: () => number) {
  const sizes = new RuntimePoolSizes(pools, repository, store, log, now);
  const changed: string[] = [];
  await sizes.start((pool) => changed.push(pool));
  return { sizes, changed };
}

describe("RuntimePoolSizes", () => {
  it("answers the configured sizes until a resize, then the resize, audited with before and after", async () => {
    const { repository, audits } = fakeRepository();
    const { sizes } = await replica(repository, new MemoryCoordinationStore());
    expect(sizes.sizeOf(pools[0]!)).toEqual({ minIdle: 1, maxTotal: 4 });
    const view = await sizes.resize("small", { minIdle: 3 }, "alice");
    expect(view).toMatchObject({ minIdle: 3, maxTotal: 4, configured: { minIdle: 1, maxTotal: 4 } });
    expect(sizes.sizeOf(pools[0]!)).toEqual({ minIdle: 3, maxTotal: 4 });
    expect(sizes.sizeOf(pools[1]!)).toEqual({ minIdle: 2, maxTotal: 10 });
    expect(audits).toEqual([
      {
        pool: "small",
        actor: "alice",
        detail: { before: { minIdle: 1, maxTotal: 4 }, after: { minIdle: 3, maxTotal: 4 } },
      },
    ]);
    // null: back to the configured value.
    expect(await sizes.resize("small", { minIdle: null }, "alice")).toMatchObject({
      minIdle: 1,
      maxTotal: 4,
    });
  });

  it("refuses bad edits with every problem, and minIdle above maxTotal once applied", async () => {
    const { repository, rows } = fakeRepository();
    const { sizes } = await replica(repository, new MemoryCoordinationStore());
    await expect(sizes.resize("small", { minIdle: -1, maxTotal: 0 }, "a")).rejects.toMatchObject({
      code: "request.malformed",
      message: expect.stringMatching(/^minIdle: .*; maxTotal: /),
    });
    for (const edit of [{}, null, "3", { minIdle: 2.5 }, { maxTotal: 1001 }, { other: 1 }]) {
      await expect(sizes.resize("small", edit, "a"), JSON.stringify(edit)).rejects.toMatchObject({
        code: "request.malformed",
      });
    }
    // Against the configured maxTotal (4), then against a stored one.
    await expect(sizes.resize("small", { minIdle: 5 }, "a")).rejects.toThrow(
      "minIdle (5) cannot exceed maxTotal (4)",
    );
    await sizes.resize("big", { minIdle: 6 }, "a");
    await expect(sizes.resize("big", { maxTotal: 5 }, "a")).rejects.toThrow(
      "minIdle (6) cannot exceed maxTotal (5)",
    );
    await expect(sizes.resize("nope", { minIdle: 1 }, "a")).rejects.toMatchObject({
      code: "request.not_found",
      status: 404,
    });
    expect([...rows.keys()]).toEqual(["big"]);
  });

  it("follows another replica's resize through the announcement", async () => {
    const { repository } = fakeRepository();
    const store = new MemoryCoordinationStore();
    const one = await replica(repository, store);
    const two = await replica(repository, store);
    await one.sizes.resize("big", { maxTotal: 20 }, "alice");
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(two.sizes.sizeOf(pools[1]!)).toEqual({ minIdle: 2, maxTotal: 20 });
    // Only the replica that resized warms the pool: one shortfall started, not one per replica.
    expect(one.changed).toEqual(["big"]);
    expect(two.changed).toEqual([]);
  });

  it("reloads on its own once its copy is old, and ignores rows of pools no longer configured", async () => {
    const { repository, rows } = fakeRepository();
    let now = 0;
    const { sizes } = await replica(repository, new MemoryCoordinationStore(), () => now);
    // Written behind its back (an announcement lost): not seen until the copy is stale.
    rows.set("small", { pool: "small", minIdle: 0, maxTotal: 2, updatedAt: new Date(), updatedBy: "x" });
    rows.set("gone", { pool: "gone", minIdle: 5, maxTotal: 5, updatedAt: new Date(), updatedBy: "x" });
    now = 29_000;
    await sizes.reloadIfStale();
    expect(sizes.sizeOf(pools[0]!)).toEqual({ minIdle: 1, maxTotal: 4 });
    now = 30_000;
    await sizes.reloadIfStale();
    expect(sizes.sizeOf(pools[0]!)).toEqual({ minIdle: 0, maxTotal: 2 });
    expect(sizes.sizeOf({ name: "gone", minIdle: 1, maxTotal: 1 })).toEqual({ minIdle: 1, maxTotal: 1 });
  });

  it("announces on the pool-sizes channel", async () => {
    const { repository } = fakeRepository();
    const store = new MemoryCoordinationStore();
    const heard: string[] = [];
    await store.subscribe(POOL_SIZES_CHANNEL, (message) => heard.push(message));
    const { sizes } = await replica(repository, store);
    await sizes.resize("small", { maxTotal: 3 }, "a");
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(heard).toEqual(["small"]);
  });
});
