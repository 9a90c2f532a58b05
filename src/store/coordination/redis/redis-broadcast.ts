/**
 * Broadcast between replicas on Redis pub/sub, channels under the deployment's prefix. A
 * subscribed connection can do nothing else, so subscribers get a connection of their own,
 * opened at the first subscription, with the offline queue on: subscriptions are replayed
 * after a reconnect. Whoever must know when messages could have been missed (a cache that
 * is only coherent while it hears every end) is told when the connection drops and when it
 * is subscribed again (`onListening`).
 */
import type { Broadcast } from "../broadcast.js";
import type { RedisCommands } from "./redis-commands.js";
import { openRedis, publisherFor, type RedisClient, type RedisTarget } from "./redis-connection.js";

export class RedisBroadcast implements Broadcast {
  private subscriber: RedisClient | undefined;
  private readonly handlers = new Map<string, ((message: string) => void)[]>();
  private readonly listeners: ((listening: boolean) => void)[] = [];
  private dropped = false;

  constructor(
    private readonly commands: RedisCommands,
    private readonly target: RedisTarget,
  ) {}

  async publish(channel: string, message: string) {
    const fullChannel = this.commands.keys.channel(channel);
    await this.commands.call(() =>
      publisherFor(this.commands.redis, fullChannel).publish(fullChannel, message),
    );
  }

  async subscribe(channel: string, handler: (message: string) => void) {
    if (!this.subscriber) {
      this.subscriber = openRedis(this.target, "subscriber");
      this.subscriber.on("error", () => {});
      this.subscriber.on("message", (fullChannel: string, message: string) => {
        for (const listener of this.handlers.get(fullChannel) ?? []) listener(message);
      });
      this.subscriber.on("close", () => {
        this.dropped = true;
        this.tell(false);
      });
      // Subscribed again (ioredis replays the subscriptions; asking once more confirms it).
      this.subscriber.on("ready", () => {
        if (!this.dropped || this.handlers.size === 0) return;
        this.dropped = false;
        this.subscriber!.subscribe(...this.handlers.keys()).then(
          () => this.tell(true),
          () => {},
        );
      });
      await this.subscriber.connect();
    }
    const fullChannel = this.commands.keys.channel(channel);
    const listeners = this.handlers.get(fullChannel) ?? [];
    listeners.push(handler);
    this.handlers.set(fullChannel, listeners);
    if (listeners.length === 1) await this.subscriber.subscribe(fullChannel);
    this.tell(true);
  }

  /** `handler(false)` when messages may be missed from now on, `handler(true)` once subscribed again. */
  onListening(handler: (listening: boolean) => void): void {
    this.listeners.push(handler);
  }

  private tell(listening: boolean): void {
    for (const listener of this.listeners) listener(listening);
  }

  close(): void {
    this.subscriber?.disconnect();
  }
}
