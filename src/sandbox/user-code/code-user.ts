/**
 * User code under an identity and bounds of its own (`codeUser`, docker sandboxes), so that
 * nothing it starts can take the server's room:
 *
 * - The server starts as root (its container grants only CAP_SETUID and CAP_SETGID, with
 *   no-new-privileges) and, before it does anything else, drops its supplementary groups,
 *   takes the code's gid, and the code's uid as its effective uid: real and saved uid stay
 *   root. So it works on the workspace as the files' owner (it can repair a chmod-ed root),
 *   it may signal user code (its effective uid is theirs) but user code may not signal or
 *   trace it (the kernel checks the target's real and saved uid, root's), RLIMIT_NPROC never
 *   counts against it (root's real uid is exempt), and its effective capability set is
 *   empty: the two capabilities stay only in its permitted set (a compromise of the server
 *   itself, not of user code, could raise them again; user code never holds them).
 * - Every user program starts through `setpriv`, which sets real, effective and saved uid
 *   and gid to the code's (allowed without any capability: each value is one the process
 *   already has), which clears all capabilities; then `sh` raises its OOM score to the
 *   maximum (the kernel's OOM killer takes any user process before the server) and caps its
 *   processes (RLIMIT_NPROC, threads included; set after the uid change, so starting a
 *   program never fails on it, only the program's own forks do), and the server lowers its
 *   CPU priority (nice 10).
 * - RLIMIT_NPROC counts the processes of a real uid across the whole host kernel, not per
 *   container: a uid shared by every sandbox would let one sandbox's processes use up
 *   another's cap. Docker sandboxes therefore get a uid of their own (container-spec.ts).
 *
 * Without `codeUser` (the process runtime, tests) programs start directly, as today, under
 * the server's own uid and without these bounds.
 */
import { setPriority } from "node:os";

export interface CodeUser {
  uid: number;
  gid: number;
}

export interface CodeBounds {
  user: CodeUser;
  /** RLIMIT_NPROC of user code; none when undefined. */
  maxProcesses?: number | undefined;
}

/** Nice value of user code: when both want the CPU, the server's answer comes first. */
const CODE_NICE = 10;
/** The kernel's OOM killer picks the process with the highest score: user code, always. */
const CODE_OOM_SCORE_ADJ = 1000;

/**
 * Makes this (root) process the server of `user`'s code: no supplementary groups, the code's
 * gid, the code's uid as effective uid, root as real and saved uid. Throws unless root.
 */
export function adoptCodeUser(user: CodeUser): void {
  if (process.getuid?.() !== 0) {
    throw new Error(
      "codeUser (--code-user) needs the sandbox server to start as root: it keeps root as its real uid " +
        "and runs user code as another (the docker runtime starts it so, with only CAP_SETUID and CAP_SETGID)",
    );
  }
  process.setgroups?.([]);
  process.setgid?.(user.gid);
  process.seteuid?.(user.uid);
  const held = { uid: process.getuid?.(), euid: process.geteuid?.(), egid: process.getegid?.() };
  if (held.uid !== 0 || held.euid !== user.uid || held.egid !== user.gid) {
    throw new Error(`could not take the code's identity ${user.uid}:${user.gid}: ${JSON.stringify(held)}`);
  }
}

/** Starts user programs: under the code's identity and bounds when there are some, else directly. */
export class CodeLauncher {
  constructor(private readonly bounds?: CodeBounds) {}

  /** Whether user code runs as a user of its own (not as the server). */
  get confined(): boolean {
    return this.bounds !== undefined;
  }

  /** The code's identity, when it has one of its own. */
  get user(): CodeUser | undefined {
    return this.bounds?.user;
  }

  /** RLIMIT_NPROC of user code, when bounded. */
  get maxProcesses(): number | undefined {
    return this.bounds?.maxProcesses;
  }

  /** The nice value user code runs at. */
  get nice(): number {
    return CODE_NICE;
  }

  /** The file and arguments that run `program` with `args` as user code. */
  command(program: string, args: readonly string[]): { file: string; args: string[] } {
    if (!this.bounds) return { file: program, args: [...args] };
    const { uid, gid } = this.bounds.user;
    const steps = [`{ echo ${CODE_OOM_SCORE_ADJ} >/proc/self/oom_score_adj; } 2>/dev/null`];
    if (this.bounds.maxProcesses !== undefined)
      steps.push(`ulimit -p ${this.bounds.maxProcesses} || exit 126`);
    steps.push('exec "$0" "$@"');
    return {
      file: "setpriv",
      args: [
        ...[`--reuid=${uid}`, `--regid=${gid}`, "--keep-groups", "--"],
        ...["/bin/sh", "-c", steps.join("; "), program, ...args],
      ],
    };
  }

  /** Called with a started program's pid: lowers its CPU priority (its children inherit it). */
  started(pid: number | undefined): void {
    if (!this.bounds || pid === undefined) return;
    try {
      setPriority(pid, CODE_NICE);
    } catch {
      // It is already gone: nothing to lower.
    }
  }

  /**
   * Variables user code sees besides the usual ones: its uid has no passwd entry, so
   * `getpass.getuser()` and the like read the name from here.
   */
  environment(): Record<string, string> {
    return this.bounds ? { USER: "sandbox", LOGNAME: "sandbox" } : {};
  }
}
