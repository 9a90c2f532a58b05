/**
 * How every part of the Redis store sends its commands: one connection, one key namespace,
 * the Lua scripts, and one rule for failures. Redis being away must fail requests fast, not
 * hang them: any failure surfaces as 503 `store.unavailable`. A read that changes nothing
 * (a GET, a listing, a count) is tried once more before that: a reply late because the
 * gateway's own event loop was busy is not Redis being away.
 *
 * Writes this replica has put off (the steps of calls, redis-call-steps.ts) are sent ahead of
 * any other command: on the one connection Redis runs them first, so whatever this replica
 * reads or writes next sees them.
 */
import { SandpoolError } from "../../../contract/error-codes.js";
import type { LuaScripts } from "./lua-scripts.js";
import type { RedisClient } from "./redis-connection.js";
import type { RedisKeys } from "./redis-keys.js";

export class RedisCommands {
  /** Sends the writes put off until the next command (set by their owner). */
  sendDeferred: () => void = () => {};

  constructor(
    readonly redis: RedisClient,
    readonly keys: RedisKeys,
    private readonly scripts: LuaScripts,
  ) {}

  /** Runs one of the scripts in ./lua (a write: never retried). */
  script(name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return this.call(() => this.scripts.run(this.redis, name, keys, args));
  }

  /**
   * `script` without sending the deferred writes first: for a script that carries those of
   * its own keys itself and touches no other keys (the others' wait for their own turn).
   */
  scriptCarryingDeferred(name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return failingAsUnavailable(() => this.scripts.run(this.redis, name, keys, args));
  }

  call<T>(command: () => Promise<T>): Promise<T> {
    this.sendDeferred();
    return failingAsUnavailable(command);
  }

  /**
   * A command that changes nothing, tried a second time before the store is declared
   * unavailable: a timeout can be this process's own stall (a busy event loop, a GC pause),
   * not Redis. Never used for a script or a write: a write that timed out may have happened.
   */
  async read<T>(command: () => Promise<T>): Promise<T> {
    this.sendDeferred();
    try {
      return await command();
    } catch {
      return failingAsUnavailable(command);
    }
  }
}

async function failingAsUnavailable<T>(command: () => Promise<T>): Promise<T> {
  try {
    return await command();
  } catch (error) {
    throw new SandpoolError("store.unavailable", "the coordination store is unavailable", {
      retryAfterSeconds: 1,
      cause: error,
    });
  }
}
