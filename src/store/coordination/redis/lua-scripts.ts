/**
 * Loads the Lua scripts beside this module (`name-<numKeys>.lua`, or `name-n.lua` for a
 * script that takes as many keys as it is given) and registers each as an ioredis command,
 * which runs it by SHA and re-sends the source only when Redis lost it (on a Cluster, to the
 * master of the keys' slot, which loads it on first use).
 *
 * A script's keys must share one hash tag: on a Cluster keys of different slots in one
 * script fail with CROSSSLOT. Checking it on every run makes a standalone Redis (and so
 * every test) refuse such a script too, instead of only a production Cluster.
 */
import { readdir, readFile } from "node:fs/promises";
import type { RedisClient } from "./redis-connection.js";

const scriptsFolder = new URL("./lua/", import.meta.url);
const SCRIPT_NAME = /^([a-z][a-z-]*)-(\d+|n)\.lua$/;

type Command = (...args: (string | number)[]) => Promise<unknown>;

export interface LuaScripts {
  defineOn(redis: RedisClient): void;
  run(redis: RedisClient, name: string, keys: string[], args: (string | number)[]): Promise<unknown>;
}

/** The scripts of `folder` (the ./lua beside this module unless a test names another). */
export async function loadLuaScripts(folder: URL = scriptsFolder): Promise<LuaScripts> {
  /** `numberOfKeys` undefined: the script's keys are counted on each run. */
  const scripts = new Map<string, { numberOfKeys?: number; lua: string; command: string }>();
  for (const file of await readdir(folder)) {
    const match = SCRIPT_NAME.exec(file);
    if (!match) continue;
    scripts.set(match[1]!, {
      command: commandName(match[1]!),
      ...(match[2] === "n" ? {} : { numberOfKeys: Number(match[2]) }),
      lua: await readFile(new URL(file, folder), "utf8"),
    });
  }
  return {
    defineOn(redis) {
      for (const script of scripts.values()) {
        redis.defineCommand(script.command, { numberOfKeys: script.numberOfKeys, lua: script.lua });
      }
    },
    run(redis, name, keys, args) {
      const script = scripts.get(name);
      if (!script) throw new Error(`no Lua script named '${name}'`);
      const variable = script.numberOfKeys === undefined;
      if (!variable && keys.length !== script.numberOfKeys)
        throw new Error(`'${name}' takes ${script.numberOfKeys} keys`);
      const tags = new Set(keys.map(hashTag));
      if (tags.size > 1)
        throw new Error(`'${name}' got keys of different hash tags: ${[...tags].join(", ")}`);
      // The method's name is made once, at load: this runs on every call of the hot path.
      const command = (redis as unknown as Record<string, Command>)[script.command]!;
      // ioredis sends a command defined without a key count with the first argument as that count.
      return variable
        ? command.call(redis, keys.length, ...keys, ...args)
        : command.call(redis, ...keys, ...args);
    },
  };
}

/** `take-idle` -> `sandpoolTakeIdle`: a method name that cannot clash with a Redis command. */
function commandName(name: string): string {
  return `sandpool${name.replace(/(^|-)([a-z])/g, (_, __, letter: string) => letter.toUpperCase())}`;
}

/**
 * The part of a key Redis Cluster hashes: the text between the first `{` and the next `}`
 * when that is not empty, else the whole key. Keys with one tag always share a slot.
 */
export function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open === -1) return key;
  const close = key.indexOf("}", open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}
