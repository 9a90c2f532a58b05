/**
 * The headers every console file is sent with. The Content-Security-Policy allows only what
 * sandpool itself serves: scripts and styles from this origin, no inline script or style
 * attribute in markup, requests to this origin alone (the admin API), no frames, no plugins,
 * no form posted elsewhere. The console keeps the admin token in the page's memory, so the
 * policy is what stands between an injected script and that token.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": CONSOLE_CONTENT_SECURITY_POLICY,
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Resource-Policy": "same-origin",
  // A new release's files are fetched again; they are small.
  "Cache-Control": "no-cache",
};
