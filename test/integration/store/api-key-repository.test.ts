import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../../src/auth/api-key-format.js";
import { ApiKeyRepository } from "../../../src/store/sql/api-key-repository.js";
import { databaseFlavours, uniqueId, useDatabase } from "./databases.js";

describe.each(databaseFlavours)("ApiKeyRepository on $name", (flavour) => {
  const handle = useDatabase(flavour);
  let keys: ApiKeyRepository;
  beforeAll(() => {
    keys = new ApiKeyRepository(handle.db);
  });

  async function create(workspace: string, expiresAt: Date | null = null) {
    const generated = generateApiKey();
    const row = await keys.create(
      { prefix: generated.prefix, workspace, hashedSecret: generated.hashedSecret, name: "ci", expiresAt },
      "alice",
    );
    return { generated, row };
  }

  it("creates a key, finds its hash by prefix, and lists it without the hash", async () => {
    const workspace = uniqueId();
    const expiresAt = new Date(Date.now() + 86_400_000);
    const { generated, row } = await create(workspace, expiresAt);
    expect(row).toEqual({
      prefix: generated.prefix,
      workspace,
      name: "ci",
      createdAt: expect.any(String),
      createdBy: "alice",
      lastUsedAt: null,
      expiresAt: expiresAt.toISOString(),
      revokedAt: null,
    });
    expect(await keys.find(generated.prefix)).toEqual({
      prefix: generated.prefix,
      workspace,
      hashedSecret: generated.hashedSecret,
      expiresAt,
      revokedAt: null,
    });
    expect(await keys.find("000000000000")).toBeUndefined();
    const other = await create(uniqueId());
    expect((await keys.list(workspace)).map((k) => k.prefix)).toEqual([generated.prefix]);
    expect((await keys.list()).map((k) => k.prefix)).toEqual(
      expect.arrayContaining([generated.prefix, other.generated.prefix]),
    );
    expect(JSON.stringify(await keys.list())).not.toContain(generated.hashedSecret);
  });

  it("revokes once (audited once), answers the row on a second revoke, and undefined for no such key", async () => {
    const workspace = uniqueId();
    const { generated } = await create(workspace);
    const first = await keys.revoke(generated.prefix, "bob");
    expect(first?.revokedAt).toEqual(expect.any(String));
    const second = await keys.revoke(generated.prefix, "carol");
    expect(second?.revokedAt).toBe(first?.revokedAt);
    expect((await keys.find(generated.prefix))?.revokedAt).toBeInstanceOf(Date);
    expect(await keys.revoke("ffffffffffff", "bob")).toBeUndefined();
    expect((await keys.audit(workspace)).map((entry) => [entry.action, entry.actor])).toEqual([
      ["revoked", "bob"],
      ["created", "alice"],
    ]);
  });

  it("records last use, never moving it backwards", async () => {
    const { generated } = await create(uniqueId());
    const later = Date.now();
    await keys.recordLastUse(new Map([[generated.prefix, later]]));
    await keys.recordLastUse(new Map([[generated.prefix, later - 60_000]]));
    const [row] = await keys.list((await keys.find(generated.prefix))!.workspace);
    expect(row!.lastUsedAt).toBe(new Date(later).toISOString());
  });
});
