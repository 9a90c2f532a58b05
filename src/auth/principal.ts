/** Who a verified bearer token speaks for: the tenant (workspace) every later step is scoped to. */
export interface Principal {
  workspace: string;
  /** The token's `sub`, when it carries one as a string; for audit, never for authorization. */
  subject: string | undefined;
  /** The token's `jti`, when present: lets audit records name the credential without holding it. */
  tokenId: string | undefined;
  /** The token's `exp`, in Unix seconds (JWT NumericDate), not milliseconds. */
  expiresAt: number;
}
