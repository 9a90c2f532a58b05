/**
 * Pool sizes changed at run time, kept so a restart (or another replica) finds them. A null
 * size means "as configured". Every change commits with its audit row, or not at all.
 */
import { type Kysely, sql } from "kysely";
import { AdminAuditRepository } from "./admin-audit-repository.js";
import type { Database } from "./database-types.js";

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
   * Sets the pool's sizes (null: back to the configured value) and audits the change with
   * the sizes in force before and after. `before` is what the caller validated against.
   */
  async put(
    pool: string,
    sizes: { minIdle: number | null; maxTotal: number | null },
    actor: string,
    detail: Record<string, unknown>,
  ): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx
        .insertInto("pool_sizes")
        .values({ pool, min_idle: sizes.minIdle, max_total: sizes.maxTotal, updated_by: actor })
        .onConflict((conflict) =>
          conflict.column("pool").doUpdateSet({
            min_idle: sizes.minIdle,
            max_total: sizes.maxTotal,
            updated_by: actor,
            updated_at: sql<Date>`now()`,
          }),
        )
        .execute();
      await this.audit.record({ actor, action: "pool.resize", target: pool, detail }, tx);
    });
  }
}
