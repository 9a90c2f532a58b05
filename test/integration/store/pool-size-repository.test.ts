/**
 * Pool sizes changed at run time, on every database flavour: a resize and its audit row
 * commit together, a refused one leaves neither, and two resizes at once of different sizes
 * both land (the row is locked while each merges).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { AdminAuditRepository } from "../../../src/store/sql/admin-audit-repository.js";
import { PoolSizeRepository } from "../../../src/store/sql/pool-size-repository.js";
import { databaseFlavours, uniqueId, useDatabase } from "./databases.js";

describe.each(databaseFlavours)("PoolSizeRepository on $name", (flavour) => {
  const handle = useDatabase(flavour);
  let sizes: PoolSizeRepository;
  let audit: AdminAuditRepository;
  beforeAll(() => {
    sizes = new PoolSizeRepository(handle.db);
    audit = new AdminAuditRepository(handle.db);
  });

  it("stores a resize with its audit row, merging with what was stored", async () => {
    const pool = uniqueId("pool");
    await sizes.update(pool, "alice", (before) => {
      expect(before).toEqual({ minIdle: null, maxTotal: null });
      return { sizes: { minIdle: 3, maxTotal: null }, detail: { step: 1 } };
    });
    await sizes.update(pool, "bob", (before) => {
      expect(before).toEqual({ minIdle: 3, maxTotal: null });
      return { sizes: { ...before, maxTotal: 9 }, detail: { step: 2 } };
    });
    expect((await sizes.list()).find((row) => row.pool === pool)).toMatchObject({
      minIdle: 3,
      maxTotal: 9,
      updatedBy: "bob",
      updatedAt: expect.any(Date),
    });
    const entries = await audit.list({ target: pool });
    expect(entries.map((entry) => [entry.actor, entry.action, entry.detail])).toEqual([
      ["bob", "pool.resize", { step: 2 }],
      ["alice", "pool.resize", { step: 1 }],
    ]);
  });

  it("changes nothing and audits nothing when the decision throws", async () => {
    const pool = uniqueId("pool");
    await expect(
      sizes.update(pool, "alice", () => {
        throw new Error("refused");
      }),
    ).rejects.toThrow("refused");
    expect((await sizes.list()).some((row) => row.pool === pool)).toBe(false);
    expect(await audit.list({ target: pool })).toEqual([]);
  });

  it("lets two resizes at once of different sizes both land", async () => {
    const pool = uniqueId("pool");
    await Promise.all([
      sizes.update(pool, "one", (before) => ({ sizes: { ...before, minIdle: 2 }, detail: {} })),
      sizes.update(pool, "two", (before) => ({ sizes: { ...before, maxTotal: 7 }, detail: {} })),
    ]);
    expect((await sizes.list()).find((row) => row.pool === pool)).toMatchObject({ minIdle: 2, maxTotal: 7 });
    expect(await audit.list({ target: pool })).toHaveLength(2);
  });
});
