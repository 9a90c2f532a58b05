/**
 * Several key sources at once, each token tried against exactly one, chosen by its shape, in
 * this documented order:
 *   1. `sp_...`: a sandpool workspace API key (the database, cached, revocable);
 *   2. three dot-separated base64url parts: a JWT (the configured key source);
 *   3. anything else: the introspection endpoint, when `auth.introspection` is configured,
 *      else refused (401).
 * Choosing by shape, not by trying each in turn, means a refusal from one source is final and
 * a JWT or a sandpool key is never sent to a third party's introspection endpoint.
 */
import { looksLikeApiKey } from "./api-key-format.js";
import { AuthRefusal } from "./auth-refusal.js";
import type { BearerAuthenticator, Caller } from "./principal.js";

// Far above any real token; bounds the work a caller can make us do (and what we would forward).
const maxAuthorizationLength = 16 * 1024;
const bearerPattern = /^Bearer[ \t]+(\S+)$/i;
const jwtShape = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export interface BearerSources {
  /** Verifies whole `Authorization` headers carrying JWTs. */
  jwt: BearerAuthenticator;
  /** Take the bare token. */
  apiKeys?: BearerAuthenticator;
  introspection?: BearerAuthenticator;
}

export class BearerSourceRouter implements BearerAuthenticator {
  constructor(private readonly sources: BearerSources) {}

  authenticate(authorization: string | undefined): Promise<Caller> {
    const value = authorization?.trim() ?? "";
    if (value === "") return Promise.reject(new AuthRefusal("missing", "no credential"));
    const token = value.length > maxAuthorizationLength ? undefined : bearerPattern.exec(value)?.[1];
    // Not a bearer credential: the JWT verifier gives its usual refusal.
    if (token === undefined) return this.sources.jwt.authenticate(authorization);
    if (looksLikeApiKey(token)) return this.#or401(this.sources.apiKeys, token);
    if (jwtShape.test(token)) return this.sources.jwt.authenticate(authorization);
    return this.#or401(this.sources.introspection, token);
  }

  #or401(source: BearerAuthenticator | undefined, token: string): Promise<Caller> {
    if (source !== undefined) return source.authenticate(token);
    return Promise.reject(
      new AuthRefusal(
        "unrecognised",
        "neither a JWT nor a sandpool key, and no introspection endpoint is configured",
      ),
    );
  }
}
