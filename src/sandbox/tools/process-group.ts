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

/** The minimal environment user programs see: nothing of the server's own (tokens, URLs). */
export function sandboxEnvironment(home: string): NodeJS.ProcessEnv {
  return {
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
