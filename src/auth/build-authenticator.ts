/**
 * The gateway's bearer authentication, assembled from the configuration: JWTs (always; admin
 * tokens are JWTs), sandpool workspace API keys (always: the database holds them), and opaque
 * tokens by introspection (when `auth.introspection` is set), routed by BearerSourceRouter.
 * Subscribes the key cache to API_KEYS_CHANNEL, so a revocation anywhere applies here at once.
 */
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Broadcast } from "../store/coordination/broadcast.js";
import { ApiKeyRepository } from "../store/sql/api-key-repository.js";
import type { Database } from "../store/sql/database-types.js";
import { ApiKeyAdmin } from "./api-key-admin.js";
import { API_KEYS_CHANNEL, ApiKeyAuthenticator } from "./api-key-authenticator.js";
import type { AuthConfig } from "./auth-config.js";
import { BearerSourceRouter } from "./bearer-sources.js";
import { IntrospectionAuthenticator } from "./introspection-authenticator.js";
import { JwtAuthenticator } from "./jwt-authenticator.js";
import type { BearerAuthenticator } from "./principal.js";
import { CachingAuthenticator } from "./verified-token-cache.js";

export interface GatewayAuthentication {
  authenticator: BearerAuthenticator;
  apiKeys: ApiKeyAuthenticator;
  apiKeyAdmin: ApiKeyAdmin;
  /** Stops the last-use timer and writes what it gathered. */
  close(): Promise<void>;
}

export async function buildAuthentication(
  config: AuthConfig,
  backends: { db: Kysely<Database>; store: Broadcast; log?: Logger },
): Promise<GatewayAuthentication> {
  const repository = new ApiKeyRepository(backends.db);
  const apiKeys = new ApiKeyAuthenticator(repository, {
    cacheMs: config.apiKeyCacheSeconds * 1000,
    flushMs: config.apiKeyLastUsedFlushMs,
    log: backends.log,
  });
  await backends.store.subscribe(API_KEYS_CHANNEL, (prefix) => apiKeys.invalidate(prefix));
  const authenticator = new BearerSourceRouter({
    // Only JWT verdicts go through the verified-token cache: keys and introspection keep their
    // own, which know about revocation and refusals.
    jwt: new CachingAuthenticator(new JwtAuthenticator(config), {
      maxAgeMs: config.verifiedTokenCacheSeconds * 1000,
    }),
    apiKeys,
    introspection: config.introspection && new IntrospectionAuthenticator(config.introspection),
  });
  return {
    authenticator,
    apiKeys,
    apiKeyAdmin: new ApiKeyAdmin(repository, backends.store),
    close: () => apiKeys.close(),
  };
}
