import { describe, expect, it } from "vitest";
import { SecretsCache } from "../../../src/secrets/secrets-cache.js";
import type { OpenedSecret, SecretsReader } from "../../../src/secrets/workspace-secrets.js";

function reader(values: () => OpenedSecret[], fail = () => false) {
  let reads = 0;
  const source: SecretsReader = {
    openedSecretsOf: async () => {
      reads++;
      if (fail()) throw new Error("store away");
      return values();
    },
  };
  return { source, reads: () => reads };
}

const s = (name: string) =>
  ({
    name,
    binding: { hosts: ["a.example"], presentation: { header: "X", template: "{{secret}}" } },
    value: name,
  }) as OpenedSecret;

describe("the secrets cache", () => {
  it("opens a workspace's secrets once for a burst, and again after its few seconds", async () => {
    let now = 0;
    let held = [s("one")];
    const { source, reads } = reader(() => held);
    const cache = new SecretsCache(source, 3_000, () => now);
    await Promise.all([cache.openedSecretsOf("w"), cache.openedSecretsOf("w"), cache.namesOf("w")]);
    expect(reads()).toBe(1);
    held = [];
    now = 2_999;
    expect(await cache.namesOf("w")).toEqual(["one"]);
    now = 3_000;
    // Removed: no longer sent once the cache's seconds are over.
    expect(await cache.namesOf("w")).toEqual([]);
  });

  it("keeps no failed read, and holds nothing without a reader", async () => {
    let failing = true;
    const { source, reads } = reader(
      () => [s("one")],
      () => failing,
    );
    const cache = new SecretsCache(source);
    await expect(cache.openedSecretsOf("w")).rejects.toThrow();
    failing = false;
    expect(await cache.namesOf("w")).toEqual(["one"]);
    expect(reads()).toBe(2);
    expect(await new SecretsCache(undefined).openedSecretsOf("w")).toEqual([]);
  });
});
