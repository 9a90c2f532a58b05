/**
 * Workspace secrets at rest, on every database flavour, through the SecretStore as the
 * gateway uses it: values sealed (the table never holds one in clear), created then replaced,
 * listed without values, opened for egress only, removed; every change audited in
 * admin_audit without the value; one workspace never sees another's.
 */
import { sql } from "kysely";
import { pino } from "pino";
import { beforeAll, describe, expect, it } from "vitest";
import { KeyRing, newKeyEntry } from "../../../src/secrets/key-ring.js";
import { SecretStore } from "../../../src/secrets/secret-store.js";
import type { SecretBinding } from "../../../src/secrets/workspace-secrets.js";
import { AdminAuditRepository } from "../../../src/store/sql/admin-audit-repository.js";
import { SecretRepository } from "../../../src/store/sql/secret-repository.js";
import { databaseFlavours, uniqueId, useDatabase } from "./databases.js";

const VALUE = "ghp_repositoryTestValue0123456789";
const binding: SecretBinding = {
  hosts: ["api.github.com"],
  methods: ["GET", "POST"],
  presentation: { header: "Authorization", template: "Bearer {{secret}}" },
};

describe.each(databaseFlavours)("SecretRepository and SecretStore on $name", (flavour) => {
  const handle = useDatabase(flavour);
  let store: SecretStore;
  let allowed: Record<string, string[]>;
  beforeAll(() => {
    allowed = {};
    store = new SecretStore({
      repository: new SecretRepository(handle.db),
      sealer: KeyRing.parse(newKeyEntry("k1")),
      allowedHostsOf: async (workspace) => allowed[workspace] ?? [],
      log: pino({ level: "silent" }),
    });
  });

  const everything = async () =>
    JSON.stringify(await sql`select * from workspace_secrets`.execute(handle.db)) +
    JSON.stringify(await sql`select * from admin_audit`.execute(handle.db));

  it("creates, replaces, lists and opens a secret; the value is sealed at rest and in no audit row", async () => {
    const workspace = uniqueId();
    const created = await store.set(workspace, "github", { value: VALUE, binding }, "alice");
    expect(created.created).toBe(true);
    expect(created.description).toEqual({
      name: "github",
      binding,
      createdAt: expect.any(String),
      updatedAt: created.description.createdAt,
    });
    const replaced = await store.set(
      workspace,
      "github",
      { value: `${VALUE}-2`, binding: { ...binding, ports: [443] } },
      "bob",
    );
    expect(replaced.created).toBe(false);
    expect(replaced.description.createdAt).toBe(created.description.createdAt);
    expect(replaced.description.binding.ports).toEqual([443]);

    expect(await store.list(workspace)).toEqual([replaced.description]);
    expect(await store.openedSecretsOf(workspace)).toEqual([
      { name: "github", binding: { ...binding, ports: [443] }, value: `${VALUE}-2` },
    ]);
    expect(await everything()).not.toContain(VALUE);

    const audit = await new AdminAuditRepository(handle.db).list({ target: "github" });
    const mine = audit.filter((row) => row.workspace === workspace);
    expect(mine.map((row) => [row.action, row.actor, row.detail?.created])).toEqual([
      ["secret.set", "bob", false],
      ["secret.set", "alice", true],
    ]);
    expect(mine[0]!.detail?.binding).toMatchObject({ hosts: ["api.github.com"], ports: [443] });
  });

  it("keeps workspaces apart, rebinds keeping the value, removes with an audit row, 404s on the absent", async () => {
    const a = uniqueId();
    const b = uniqueId();
    await store.set(a, "token", { value: VALUE, binding }, "alice");
    expect(await store.list(b)).toEqual([]);
    expect(await store.openedSecretsOf(b)).toEqual([]);
    await expect(store.remove(b, "token", "mallory")).rejects.toMatchObject({ code: "request.not_found" });
    expect(await store.existing(a, ["token", "other"])).toEqual(new Set(["token"]));

    const rebound = await store.rebind(a, "token", { ...binding, hosts: ["*.github.com"] }, "carol");
    expect(rebound?.binding.hosts).toEqual(["*.github.com"]);
    expect((await store.openedSecretsOf(a))[0]!.value).toBe(VALUE);
    expect(await store.rebind(a, "absent", binding, "carol")).toBeUndefined();

    await store.remove(a, "token", "alice");
    expect(await store.list(a)).toEqual([]);
    await expect(store.remove(a, "token", "alice")).rejects.toMatchObject({ code: "request.not_found" });
    const audit = await new AdminAuditRepository(handle.db).list({ target: "token" });
    expect(audit.filter((row) => row.workspace === a).map((row) => row.action)).toEqual([
      "secret.remove",
      "secret.set",
      "secret.set",
    ]);
  });

  it("refuses a bound host outside the workspace's egressAllowHosts, naming it", async () => {
    const workspace = uniqueId();
    allowed[workspace] = ["*.example.com", "pypi.org"];
    await expect(
      store.set(
        workspace,
        "x",
        { value: VALUE, binding: { ...binding, hosts: ["api.example.com", "evil.test"] } },
        "a",
      ),
    ).rejects.toMatchObject({
      code: "request.malformed",
      message: expect.stringMatching(/evil\.test is outside/),
    });
    await store.set(
      workspace,
      "x",
      { value: VALUE, binding: { ...binding, hosts: ["api.example.com"] } },
      "a",
    );
    expect(await store.list(workspace)).toHaveLength(1);
  });

  it("without a key ring: setting is refused naming the setting; listing and opening still answer", async () => {
    const keyless = new SecretStore({
      repository: new SecretRepository(handle.db),
      sealer: undefined,
      allowedHostsOf: async () => [],
      log: pino({ level: "silent" }),
    });
    const workspace = uniqueId();
    await expect(keyless.set(workspace, "x", { value: VALUE, binding }, "a")).rejects.toMatchObject({
      code: "secrets.not_configured",
      message: expect.stringMatching(/secrets\.keys.*SANDPOOL_SECRETS_KEYS/),
    });
    await store.set(workspace, "x", { value: VALUE, binding }, "a");
    expect(await keyless.list(workspace)).toHaveLength(1);
    expect(await keyless.openedSecretsOf(workspace)).toEqual([]);
    // A ring without the key that sealed it leaves the secret out rather than failing every one.
    const rotatedAway = new SecretStore({
      repository: new SecretRepository(handle.db),
      sealer: KeyRing.parse(newKeyEntry("k9")),
      allowedHostsOf: async () => [],
      log: pino({ level: "silent" }),
    });
    expect(await rotatedAway.openedSecretsOf(workspace)).toEqual([]);
  });
});
