/**
 * Pool sizes changed at run time, kept so a restart (or another replica) finds them. A null
 * size means "as configured". Every change commits with its audit row, or not at all.
 */
import { type Kysely, sql } from "kysely";
import { AdminAuditRepository } from "./admin-audit-repository.js";
import type { Database } from "./database-types.js";

/** Sizes as stored: null is "as configured". */
export interface StoredPoolSizes {
  minIdle: number | null;
  maxTotal: number | null;
}

export interface PoolSizeOverride {
  pool: string;
  minIdle: number | null;
  maxTotal: number | null;
  updatedAt: Date;
  updatedBy: string;
}

export class PoolSizeRepository {
  private readonly audit: AdminAuditRepository;

  constructor(private readonly db: Kysely<Database>) {
    this.audit = new AdminAuditRepository(db);
  }

  async list(): Promise<PoolSizeOverride[]> {
    const rows = await this.db.selectFrom("pool_sizes").selectAll().orderBy("pool").execute();
    return rows.map((row) => ({
      pool: row.pool,
      minIdle: row.min_idle,
      maxTotal: row.max_total,
      updatedAt: row.updated_at,
      updatedBy: row.updated_by,
    }));
  }

  /**
   * Changes the pool's sizes in one transaction: `decide` gets the stored sizes (null: as
   * configured), locked against concurrent resizes, and returns the new ones with the audit
   * detail, or throws to change nothing. The audit row commits with the change.
   */
  async update(
    pool: string,
    actor: string,
    decide: (before: StoredPoolSizes) => { sizes: StoredPoolSizes; detail: Record<string, unknown> },
  ): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      // A row to lock even on the first resize; a concurrent first resize waits on this insert.
      await tx
        .insertInto("pool_sizes")
        .values({ pool, min_idle: null, max_total: null, updated_by: actor })
        .onConflict((conflict) => conflict.column("pool").doNothing())
        .execute();
      const row = await tx
        .selectFrom("pool_sizes")
        .select(["min_idle", "max_total"])
        .where("pool", "=", pool)
        .forUpdate()
        .executeTakeFirstOrThrow();
      const { sizes, detail } = decide({ minIdle: row.min_idle, maxTotal: row.max_total });
      await tx
        .updateTable("pool_sizes")
        .set({
          min_idle: sizes.minIdle,
          max_total: sizes.maxTotal,
          updated_by: actor,
          updated_at: sql<Date>`now()`,
        })
        .where("pool", "=", pool)
        .execute();
      await this.audit.record({ actor, action: "pool.resize", target: pool, detail }, tx);
    });
  }
}
