/**
 * Who a verified bearer token speaks for. Every contract route is scoped to one tenant
 * (workspace); an admin token may speak for no workspace at all and reaches the admin API only.
 */

/** A verified token, before a route has asked for what it needs. */
export interface Caller {
  /**
   * The tenant every contract route is scoped to. Undefined only on an admin token that names
   * no workspace (or `*`): contract routes refuse such a caller (401), failing closed.
   */
  workspace: string | undefined;
  /**
   * True when the token carries the admin claim (`auth.adminClaim`) as the JSON `true`: it may use
   * the admin API. Absent on ordinary tokens; anything but `true` means not an admin.
   */
  admin?: boolean;
  /** The token's `sub`, when it carries one as a string; for audit, never for authorization. */
  subject: string | undefined;
  /** The token's `jti`, when present: lets audit records name the credential without holding it. */
  tokenId: string | undefined;
  /**
   * When the token stops being accepted, in Unix seconds (JWT NumericDate), not milliseconds:
   * its `exp`, or `iat + auth.maxTokenAgeSeconds` when that comes first.
   */
  expiresAt: number;
}

/** Turns an `Authorization` header into the caller it speaks for, or refuses (401). */
export interface BearerAuthenticator {
  authenticate(authorization: string | undefined): Promise<Caller>;
}

/** A caller scoped to one workspace: what every contract route sees. */
export interface Principal extends Caller {
  workspace: string;
}

/** Narrows a caller to a workspace-scoped principal, or undefined when it names no workspace. */
export function scopedPrincipal(caller: Caller): Principal | undefined {
  return caller.workspace === undefined ? undefined : (caller as Principal);
}
