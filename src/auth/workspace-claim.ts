/**
 * Finds the workspace in a verified token's claims. The claim name is configurable because
 * issuers differ: a plain `workspace_id`, or a namespaced object claim reached by a dotted path
 * (`https://example.com/claims.workspace`). A literal claim of the full name always wins, so
 * names that merely contain dots (URLs) keep working.
 */

/** Workspace ids end up in keys, labels and log lines: a short, plain alphabet keeps them inert there. */
export const workspaceIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The workspace id, or undefined when the claim is absent, not a string, or not a valid id. */
export function readWorkspaceClaim(claims: Record<string, unknown>, claimName: string): string | undefined {
  const value = resolveClaim(claims, claimName);
  return typeof value === "string" && workspaceIdPattern.test(value) ? value : undefined;
}

function resolveClaim(claims: Record<string, unknown>, path: string): unknown {
  // Own properties only: `__proto__` or `constructor` must not resolve to something inherited.
  if (Object.hasOwn(claims, path)) return claims[path];
  // Try the longest prefix first, so `https://example.com/claims.workspace` splits at the last dot.
  for (let dot = path.lastIndexOf("."); dot > 0; dot = path.lastIndexOf(".", dot - 1)) {
    const head = path.slice(0, dot);
    const inner = Object.hasOwn(claims, head) ? claims[head] : undefined;
    if (isPlainObject(inner)) return resolveClaim(inner, path.slice(dot + 1));
  }
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
