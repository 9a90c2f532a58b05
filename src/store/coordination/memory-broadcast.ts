/** The memory store's broadcast (broadcast.ts): one process, so its own subscribers hear it. */
import type { Broadcast } from "./broadcast.js";
import { getOrCreate } from "./memory-expiring-set.js";

export class MemoryBroadcast implements Broadcast {
  private readonly subscribers = new Map<string, ((message: string) => void)[]>();

  async publish(channel: string, message: string) {
    for (const handler of this.subscribers.get(channel) ?? []) queueMicrotask(() => handler(message));
  }

  async subscribe(channel: string, handler: (message: string) => void) {
    getOrCreate(this.subscribers, channel, () => []).push(handler);
  }

  /** Nobody hears anything after the store closes. */
  unsubscribeAll(): void {
    this.subscribers.clear();
  }
}
