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
 * (127.0.0.1:3128), its only way out.
 */
const PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"];

/** The minimal environment user programs see: nothing of the server's own (tokens, URLs). */
export function sandboxEnvironment(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const proxies = Object.fromEntries(
    PROXY_VARIABLES.filter((name) => process.env[name] !== undefined).map((name) => [
      name,
      process.env[name],
    ]),
  );
  return {
    ...proxies,
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
