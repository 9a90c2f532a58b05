/**
 * Opaque bearer tokens checked at the platform's token introspection endpoint (RFC 7662):
 * POST `token=<token>` form-encoded, with the configured client credentials as HTTP Basic.
 * `active: true` with a valid workspace in the configured field, for this audience (the
 * answer's `aud` names `audience`, its `client_id` is one of `allowedClientIds`, each when
 * set), authenticates; every other answer is 401 `auth.invalid`. An endpoint that is down, slow, or answers something that is
 * not an RFC 7662 JSON object is 503 `auth.introspection_unavailable`: a token nobody could
 * vouch for never falls back to a default tenant.
 *
 * Answers are cached by the token's fingerprint: an active one for `cacheSeconds`, never past
 * its `exp`; a refusal for `refusalCacheSeconds`. Concurrent calls with one token share one
 * request. An introspected token is never an admin token.
 */
import { SandpoolError } from "../contract/error-codes.js";
import { AuthRefusal } from "./auth-refusal.js";
import { credentialFingerprint } from "./failed-auth-limiter.js";
import type { IntrospectionConfig } from "./introspection-config.js";
import type { BearerAuthenticator, Caller } from "./principal.js";
import { readWorkspaceClaim } from "./workspace-claim.js";

// Bounds what a misbehaving endpoint can make us buffer.
const MAX_ANSWER_BYTES = 64 * 1024;

type Verdict = { caller: Caller } | { refusal: string };

interface Cached {
  verdict: Verdict;
  until: number;
}

export interface IntrospectionOptions {
  now?: () => number;
  maxEntries?: number;
}

export class IntrospectionAuthenticator implements BearerAuthenticator {
  readonly #verdicts = new Map<string, Cached>();
  readonly #asking = new Map<string, Promise<Verdict>>();
  readonly #authorization: string;
  readonly #now: () => number;
  readonly #maxEntries: number;

  constructor(
    private readonly config: IntrospectionConfig,
    options: IntrospectionOptions = {},
  ) {
    // RFC 6749 section 2.3.1: the id and secret are form-encoded before the Basic encoding.
    const id = formEncode(config.clientId);
    const secret = formEncode(config.clientSecret);
    this.#authorization = `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
    this.#now = options.now ?? Date.now;
    this.#maxEntries = options.maxEntries ?? 10_000;
  }

  /** Takes the bare token (the `Authorization` header's credential). */
  async authenticate(token: string | undefined): Promise<Caller> {
    if (token === undefined || token === "") throw new AuthRefusal("missing", "no credential");
    const key = credentialFingerprint(token);
    const cached = this.#verdicts.get(key);
    let verdict: Verdict;
    if (cached !== undefined && cached.until > this.#now()) verdict = cached.verdict;
    else {
      let asking = this.#asking.get(key);
      if (asking === undefined) {
        asking = this.#ask(token).finally(() => this.#asking.delete(key));
        this.#asking.set(key, asking);
        asking.then((fresh) => this.#remember(key, fresh)).catch(() => {});
      }
      verdict = await asking;
    }
    if ("refusal" in verdict) throw new AuthRefusal("introspection_refused", verdict.refusal);
    return { ...verdict.caller };
  }

  #remember(key: string, verdict: Verdict): void {
    const now = this.#now();
    const until =
      "refusal" in verdict
        ? now + this.config.refusalCacheSeconds * 1000
        : Math.min(now + this.config.cacheSeconds * 1000, verdict.caller.expiresAt * 1000);
    if (until <= now) return;
    if (this.#verdicts.size >= this.#maxEntries) this.#verdicts.delete(this.#verdicts.keys().next().value!);
    this.#verdicts.set(key, { verdict, until });
  }

  async #ask(token: string): Promise<Verdict> {
    const { request } = await import("undici");
    let answer: unknown;
    try {
      const response = await request(this.config.url, {
        method: "POST",
        headers: {
          authorization: this.#authorization,
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json",
        },
        body: new URLSearchParams({ token, token_type_hint: "access_token" }).toString(),
        headersTimeout: this.config.timeoutMs,
        bodyTimeout: this.config.timeoutMs,
        // undici follows no redirect: the answer comes from the configured endpoint or not at all.
        signal: AbortSignal.timeout(this.config.timeoutMs),
      });
      const text = await readCapped(response.body);
      if (response.statusCode !== 200) {
        throw new Error(`the endpoint answered HTTP ${response.statusCode}`);
      }
      answer = JSON.parse(text);
    } catch (error) {
      throw unavailable(error);
    }
    if (typeof answer !== "object" || answer === null || Array.isArray(answer))
      throw unavailable(new Error("the endpoint's answer is not a JSON object"));
    return this.#judge(answer as Record<string, unknown>);
  }

  #judge(answer: Record<string, unknown>): Verdict {
    // Only the JSON `true` (own property): "true", 1 or anything else is inactive.
    if (!Object.hasOwn(answer, "active") || answer.active !== true) return { refusal: "token not active" };
    const notMeantHere = this.#audienceRefusal(answer);
    if (notMeantHere !== undefined) return { refusal: notMeantHere };
    const workspace = readWorkspaceClaim(answer, this.config.workspaceField);
    if (workspace === undefined) return { refusal: `no valid workspace in '${this.config.workspaceField}'` };
    const nowSeconds = Math.floor(this.#now() / 1000);
    const exp =
      typeof answer.exp === "number" && Number.isFinite(answer.exp) ? Math.floor(answer.exp) : undefined;
    if (exp !== undefined && exp <= nowSeconds) return { refusal: "token expired" };
    return {
      caller: {
        workspace,
        subject: typeof answer.sub === "string" ? answer.sub : undefined,
        tokenId: typeof answer.jti === "string" ? answer.jti : undefined,
        // Without exp, the answer is good for as long as it is cached.
        expiresAt: exp ?? nowSeconds + Math.max(1, this.config.cacheSeconds),
      },
    };
  }

  /** Why the token is not meant for sandpool (its `aud`, its `client_id`), or undefined when it is. */
  #audienceRefusal(answer: Record<string, unknown>): string | undefined {
    const { audience, allowedClientIds } = this.config;
    if (audience !== undefined && !ownStrings(answer, "aud").includes(audience))
      return `aud does not name '${audience}'`;
    if (allowedClientIds !== undefined) {
      const client = Object.hasOwn(answer, "client_id") ? answer.client_id : undefined;
      if (typeof client !== "string" || !allowedClientIds.includes(client)) return "client_id is not allowed";
    }
    return undefined;
  }
}

/** An answer's field as a list of strings (RFC 7662 `aud`: one string or an array); [] otherwise. */
function ownStrings(answer: Record<string, unknown>, field: string): string[] {
  const value = Object.hasOwn(answer, field) ? answer[field] : undefined;
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === "string");
  return [];
}

async function readCapped(body: AsyncIterable<Uint8Array> & { destroy?: () => void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      body.destroy?.();
      throw new Error(`the endpoint's answer exceeds ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString("utf8");
}

function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice("v=".length);
}

function unavailable(cause: unknown): SandpoolError {
  return new SandpoolError(
    "auth.introspection_unavailable",
    "the token introspection endpoint is unavailable; try again shortly",
    { cause: cause instanceof Error ? cause : new Error(String(cause)), retryAfterSeconds: 5 },
  );
}
