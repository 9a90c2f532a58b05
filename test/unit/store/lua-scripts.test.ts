import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { hashTag, loadLuaScripts } from "../../../src/store/coordination/redis/lua-scripts.js";
import type { RedisClient } from "../../../src/store/coordination/redis/redis-connection.js";

describe("hashTag: the part of a key Redis Cluster hashes", () => {
  it("is the text in the first braces", () => {
    expect(hashTag("sandpool:d:{ws:team}:slots")).toBe("ws:team");
    expect(hashTag("{sandpool-jobs}:q:wait")).toBe("sandpool-jobs");
    expect(hashTag("a{b}c{d}")).toBe("b");
  });

  it("is the whole key without braces, or with empty ones", () => {
    expect(hashTag("plain:key")).toBe("plain:key");
    expect(hashTag("a{}b{c}")).toBe("a{}b{c}");
    expect(hashTag("a{b")).toBe("a{b");
  });
});

describe("Lua scripts refuse keys of two hash tags (CROSSSLOT on a Cluster)", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "sandpool-lua-"));
  await writeFile(path.join(dir, "pair-2.lua"), "return redis.call('GET', KEYS[1])\n");
  const scripts = await loadLuaScripts(pathToFileURL(`${dir}/`));
  // Only what run() reaches for: the command defineOn registered.
  const sent: unknown[][] = [];
  const client = {
    defineCommand(name: string) {
      (client as unknown as Record<string, unknown>)[name] = async (...args: unknown[]) => sent.push(args);
    },
  };
  scripts.defineOn(client as unknown as RedisClient);
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it("runs a script whose keys share a tag", async () => {
    await scripts.run(client as unknown as RedisClient, "pair", ["p{ws:a}:x", "p{ws:a}:y"], [1]);
    expect(sent).toEqual([["p{ws:a}:x", "p{ws:a}:y", 1]]);
  });

  it("refuses, before sending anything, keys of two workspaces", () => {
    expect(() =>
      scripts.run(client as unknown as RedisClient, "pair", ["p{ws:a}:x", "p{ws:b}:x"], []),
    ).toThrow(/different hash tags: ws:a, ws:b/);
    expect(sent).toHaveLength(1);
  });
});
