/**
 * How every part of the Redis store sends its commands: one connection, one key namespace,
 * the Lua scripts, and one rule for failures. Redis being away must fail requests fast, not
 * hang them: any failure surfaces as 503 `store.unavailable`. A read that changes nothing
 * (a GET, a listing, a count) is tried once more before that: a reply late because the
 * gateway's own event loop was busy is not Redis being away.
 */
import { SandpoolError } from "../../../contract/error-codes.js";
import type { LuaScripts } from "./lua-scripts.js";
import type { RedisClient } from "./redis-connection.js";
import type { RedisKeys } from "./redis-keys.js";

export class RedisCommands {
  constructor(
    readonly redis: RedisClient,
    readonly keys: RedisKeys,
    private readonly scripts: LuaScripts,
  ) {}

  /** Runs one of the scripts in ./lua (a write: never retried). */
  script(name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return this.call(() => this.scripts.run(this.redis, name, keys, args));
  }

  async call<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (error) {
      throw unavailable(error);
    }
  }

  /**
   * A command that changes nothing, tried a second time before the store is declared
   * unavailable: a timeout can be this process's own stall (a busy event loop, a GC pause),
   * not Redis. Never used for a script or a write: a write that timed out may have happened.
   */
  async read<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch {
      return this.call(command);
    }
  }
}

function unavailable(cause: unknown): SandpoolError {
  return new SandpoolError("store.unavailable", "the coordination store is unavailable", {
    retryAfterSeconds: 1,
    cause,
  });
}
