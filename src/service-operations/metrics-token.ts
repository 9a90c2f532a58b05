/**
 * The bearer token `/metrics` requires when `metrics.token` is set. The presented token and
 * the configured one are compared as SHA-256 digests with timingSafeEqual: equal lengths, so
 * neither the comparison's time nor an early length check says how much of a guess was right.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { MetricsSettings } from "./metrics-settings.js";

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

const digest = (token: string) => createHash("sha256").update(token).digest();

export class MetricsToken {
  readonly #digest: Buffer;

  constructor(token: string) {
    this.#digest = digest(token);
  }

  /** Whether an `Authorization` header carries the token as a bearer credential. */
  accepts(authorization: string | undefined): boolean {
    const presented = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
    return presented !== undefined && timingSafeEqual(digest(presented), this.#digest);
  }
}

/** The token to require, or undefined: `/metrics` is open. */
export function metricsTokenOf(settings: MetricsSettings | undefined): MetricsToken | undefined {
  return settings?.token === undefined ? undefined : new MetricsToken(settings.token);
}
