/**
 * Loads the Lua scripts beside this module (`name-<numKeys>.lua`) and registers each as an
 * ioredis command, which runs it by SHA and re-sends the source only when Redis lost it.
 */
import { readdir, readFile } from "node:fs/promises";
import type { Redis } from "ioredis";

const scriptsFolder = new URL("./lua/", import.meta.url);
const SCRIPT_NAME = /^([a-z][a-z-]*)-(\d+)\.lua$/;

type Command = (...args: (string | number)[]) => Promise<unknown>;

export interface LuaScripts {
  defineOn(redis: Redis): void;
  run(redis: Redis, name: string, keys: string[], args: (string | number)[]): Promise<unknown>;
}

export async function loadLuaScripts(): Promise<LuaScripts> {
  const scripts = new Map<string, { numberOfKeys: number; lua: string; command: string }>();
  for (const file of await readdir(scriptsFolder)) {
    const match = SCRIPT_NAME.exec(file);
    if (!match) continue;
    scripts.set(match[1]!, {
      command: commandName(match[1]!),
      numberOfKeys: Number(match[2]),
      lua: await readFile(new URL(file, scriptsFolder), "utf8"),
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
      if (keys.length !== script.numberOfKeys) throw new Error(`'${name}' takes ${script.numberOfKeys} keys`);
      // The method's name is made once, at load: this runs on every call of the hot path.
      const command = (redis as unknown as Record<string, Command>)[script.command]!;
      return command.call(redis, ...keys, ...args);
    },
  };
}

/** `take-idle` -> `sandpoolTakeIdle`: a method name that cannot clash with a Redis command. */
function commandName(name: string): string {
  return `sandpool${name.replace(/(^|-)([a-z])/g, (_, __, letter: string) => letter.toUpperCase())}`;
}
