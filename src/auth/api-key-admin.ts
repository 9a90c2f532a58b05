/**
 * Operators' side of workspace API keys: create (the key is returned once, only its hash is
 * kept), list (never a secret), revoke. Every change is audited by the repository and
 * announced on API_KEYS_CHANNEL, so every replica drops its cached copy at once.
 */
import { SandpoolError } from "../contract/error-codes.js";
import { announceCommitted } from "../store/coordination/announce.js";
import type { Broadcast } from "../store/coordination/broadcast.js";
import type { ApiKeyRepository, ApiKeyRow } from "../store/sql/api-key-repository.js";
import { API_KEYS_CHANNEL } from "./api-key-authenticator.js";
import { apiKeyPrefixPattern, generateApiKey } from "./api-key-format.js";

export interface CreateApiKey {
  workspace: string;
  name?: string | null;
  /** Seconds from now; unset: the key never expires (revoke it to end it). */
  expiresInSeconds?: number;
}

export interface CreatedApiKey extends ApiKeyRow {
  /** The whole key: shown this once, never again. */
  key: string;
}

export class ApiKeyAdmin {
  constructor(
    private readonly repository: ApiKeyRepository,
    private readonly store: Pick<Broadcast, "publish">,
  ) {}

  async create(request: CreateApiKey, actor: string): Promise<CreatedApiKey> {
    const generated = generateApiKey();
    const expiresAt =
      request.expiresInSeconds === undefined ? null : new Date(Date.now() + request.expiresInSeconds * 1000);
    const row = await this.repository.create(
      {
        prefix: generated.prefix,
        workspace: request.workspace,
        hashedSecret: generated.hashedSecret,
        name: request.name ?? null,
        expiresAt,
      },
      actor,
    );
    // A replica that was asked for this prefix before it existed remembers "unknown" briefly.
    await announceCommitted(this.store, API_KEYS_CHANNEL, generated.prefix);
    return { ...row, key: generated.key };
  }

  list(workspace?: string): Promise<ApiKeyRow[]> {
    return this.repository.list(workspace);
  }

  /** Creations and revocations of a workspace's keys, newest first. */
  audit(workspace: string) {
    return this.repository.audit(workspace);
  }

  /** Revokes a key everywhere; 404 `request.not_found` when no key has this prefix. */
  async revoke(prefix: string, actor: string): Promise<ApiKeyRow> {
    if (!apiKeyPrefixPattern.test(prefix))
      throw new SandpoolError("request.malformed", "not an API key prefix (12 lowercase hex characters)");
    const row = await this.repository.revoke(prefix, actor);
    if (row === undefined) throw new SandpoolError("request.not_found", `no API key with prefix ${prefix}`);
    await this.store.publish(API_KEYS_CHANNEL, prefix);
    return row;
  }
}
