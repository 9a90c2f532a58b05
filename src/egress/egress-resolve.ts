/**
 * How the egress proxy learns addresses: every address a name resolves to (within the
 * connect deadline), and the gateway host's own addresses (refused unless a grant allows).
 */
import { lookup } from "node:dns/promises";
import { networkInterfaces } from "node:os";

/** Every address a name resolves to (IPv4 and IPv6). */
export type EgressResolver = (host: string) => Promise<string[]>;

export const systemResolver: EgressResolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

export function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .flatMap((entry) => (entry ? [entry.address] : []));
}

/** `resolve(host)`, or ETIMEDOUT once `timeoutMs` has passed. */
export function resolveWithin(resolve: EgressResolver, host: string, timeoutMs: number): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })), timeoutMs);
  });
  return Promise.race([resolve(host), timeout]).finally(() => clearTimeout(timer));
}
