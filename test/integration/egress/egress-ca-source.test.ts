/**
 * Where the egress CA comes from: the operator's files, else the one row in Postgres (made
 * once, its key sealed), which every replica racing at start-up ends up sharing.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportCaKeyPem, generateDeploymentCa } from "../../../src/egress/tls/deployment-ca.js";
import { loadEgressCa, upstreamCaOf } from "../../../src/egress/tls/egress-ca-source.js";
import { EgressCaRepository } from "../../../src/store/sql/egress-ca-repository.js";
import { testSealer } from "../../support/test-sealer.js";
import { databaseFlavours, useDatabase } from "../store/databases.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sandpool-ca-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("an egress CA from files", () => {
  it("is the operator's, and its key must come with it", async () => {
    const ca = await generateDeploymentCa("ops");
    const certFile = path.join(dir, "tls.crt");
    const keyFile = path.join(dir, "tls.key");
    await writeFile(certFile, ca.certPem);
    await writeFile(keyFile, await exportCaKeyPem(ca));
    const loaded = await loadEgressCa({
      settings: { caCertFile: certFile, caKeyFile: keyFile },
      deployment: "x",
    });
    expect(loaded.certPem).toBe(ca.certPem);
    await expect(loadEgressCa({ settings: { caCertFile: certFile }, deployment: "x" })).rejects.toThrow(
      /go together/,
    );
  });

  it("is refused when there are neither files nor a store", async () => {
    await expect(loadEgressCa({ settings: {}, deployment: "x" })).rejects.toThrow(/no egress CA/);
  });

  it("upstreams are verified against Node's roots and the extra files", async () => {
    const extra = await generateDeploymentCa("upstream");
    const file = path.join(dir, "upstream.pem");
    await writeFile(file, extra.certPem);
    const trusted = await upstreamCaOf({ upstreamCaFiles: [file] });
    expect(trusted.at(-1)).toBe(extra.certPem);
    expect(trusted.length).toBeGreaterThan(100);
  });
});

describe.each(databaseFlavours)("an egress CA kept in $name", (flavour) => {
  const handle = useDatabase(flavour);

  it("is made once, shared by replicas racing to make it, its key sealed", async () => {
    const sealer = testSealer();
    const store = new EgressCaRepository(handle.db);
    const replicas = await Promise.all(
      [1, 2, 3, 4].map(() => loadEgressCa({ settings: {}, deployment: "prod", store, sealer })),
    );
    expect(new Set(replicas.map((ca) => ca.certPem)).size).toBe(1);
    const stored = (await store.read())!;
    expect(stored.certPem).toBe(replicas[0]!.certPem);
    expect(stored.sealedKey).not.toMatch(/PRIVATE KEY/);
    // A restart finds the same one.
    const later = await loadEgressCa({ settings: {}, deployment: "prod", store, sealer });
    expect(later.certPem).toBe(stored.certPem);
    // Another key ring cannot open it: a clear refusal, never a new CA behind the sandboxes' back.
    await expect(
      loadEgressCa({ settings: {}, deployment: "prod", store, sealer: testSealer() }),
    ).rejects.toThrow(/cannot be opened/);
  });
});
