/**
 * Messages between replicas (policy invalidation, pool resizes, key revocations): at most
 * once, to whoever is subscribed now. A lost message must only delay a change, never lose
 * it: every receiver's cache also expires or reloads on its own (see announce.ts).
 */
export interface Broadcast {
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, handler: (message: string) => void): Promise<void>;
}
