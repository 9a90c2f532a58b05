/**
 * The deployment's egress CA as stored (migration 0017): one row, written once by whichever
 * replica gets there first. The key arrives sealed and leaves sealed: opening it is the
 * caller's business (src/egress/tls/egress-ca-source.ts).
 */
import type { Kysely } from "kysely";
import type { Database } from "./database-types.js";

export interface StoredEgressCa {
  certPem: string;
  sealedKey: string;
}

export class EgressCaRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async read(): Promise<StoredEgressCa | undefined> {
    const row = await this.db.selectFrom("egress_ca").select(["cert_pem", "sealed_key"]).executeTakeFirst();
    return row && { certPem: row.cert_pem, sealedKey: row.sealed_key };
  }

  /**
   * Stores `ca` unless a CA is stored already, and answers the one stored: of replicas
   * racing to make the first, all end up with the winner's.
   */
  async insertOrRead(ca: StoredEgressCa): Promise<StoredEgressCa> {
    await this.db
      .insertInto("egress_ca")
      .values({ cert_pem: ca.certPem, sealed_key: ca.sealedKey })
      .onConflict((conflict) => conflict.column("id").doNothing())
      .execute();
    const stored = await this.read();
    if (!stored) throw new Error("the egress CA was neither inserted nor found");
    return stored;
  }
}
