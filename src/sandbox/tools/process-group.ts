/**
 * Signals a whole process group. Every program a session starts leads its own group
 * (spawned detached), so a timeout or a destroyed session takes the program's children
 * down with it.
 */
export function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone, which is what we wanted.
  }
}

/**
 * Proxy settings pass through: an egress sandbox's container sets them to its forwarder
 * (127.0.0.1:3128), its only way out. So do the trust settings that name the deployment's
 * egress CA (files the gateway wrote in /run/sandpool, read-only here): OpenSSL (Python's
 * ssl, curl) reads SSL_CERT_FILE, requests REQUESTS_CA_BUNDLE, curl CURL_CA_BUNDLE, node
 * NODE_EXTRA_CA_CERTS.
 */
export const PASSED_VARIABLES = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "SSL_CERT_FILE",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "NODE_EXTRA_CA_CERTS",
];

/** The minimal environment user programs see: nothing of the server's own (tokens, URLs). */
export function sandboxEnvironment(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const passed = Object.fromEntries(
    PASSED_VARIABLES.filter((name) => process.env[name] !== undefined).map((name) => [
      name,
      process.env[name],
    ]),
  );
  return {
    ...passed,
    ...extra,
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
    TERM: "dumb",
    PYTHONUNBUFFERED: "1",
    PYTHONIOENCODING: "utf-8",
    PYTHONDONTWRITEBYTECODE: "1",
  };
}
