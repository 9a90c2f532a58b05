/**
 * The server's socket belongs to whoever made its directory (the gateway, or the node that
 * started the sandbox), never to the code's uid: user code must not reach the server's own
 * API (recycle, pause-listener) on its sandbox.
 *
 * The server runs as the code's uid (code-user.ts), so a socket it bound as itself would be
 * the code's: user code could connect to it whatever its mode. It therefore binds as the
 * directory's owner instead, with a umask that leaves the socket 0600 (under gVisor the
 * socket is a host file made through runsc --host-uds=create, which cannot be chmod-ed
 * after: the umask is what holds there too). Only that owner (and root, the gateway in CI
 * and dev) may connect; user code gets EACCES on runc and EPERM on gVisor. The directory
 * need not be writable by anyone else, so the host never makes it world-writable (the
 * gateway's socket-dirs.ts).
 *
 * How: the server keeps root as its real and saved uid, so it may take euid 0 back, which
 * makes its permitted CAP_SETUID and CAP_SETGID effective, take the owner's gid and uid as
 * effective ids for the bind, and return to the code's. The bind is synchronous (Node binds
 * inside `server.listen`), so no other work of the server runs under the owner's identity.
 */
import { statSync } from "node:fs";
import type { CodeUser } from "./code-user.js";

/** Runs a synchronous bind under another identity; returns what the bind returns. */
export type SocketBinder = <T>(bind: () => T) => T;

/** Sockets made under it are the owner's alone (rw-------). */
const OWNER_ONLY_UMASK = 0o177;

/** A binder that makes sockets in `dir` as `dir`'s owner, then gives the server the code's identity back. */
export function bindAsDirectoryOwner(dir: string, code: CodeUser): SocketBinder {
  return (bind) => {
    const owner = statSync(dir);
    if (owner.uid === code.uid) {
      throw new Error(
        `the socket directory ${dir} belongs to the code's uid ${code.uid}: user code could reach the server's API`,
      );
    }
    process.seteuid?.(0);
    let result: ReturnType<typeof bind>;
    try {
      process.setegid?.(owner.gid);
      process.seteuid?.(owner.uid);
      const umask = process.umask(OWNER_ONLY_UMASK);
      try {
        result = bind();
      } finally {
        process.umask(umask);
      }
    } finally {
      backToCode(code);
    }
    return result;
  };
}

function backToCode(code: CodeUser): void {
  process.seteuid?.(0);
  process.setegid?.(code.gid);
  process.seteuid?.(code.uid);
  if (process.geteuid?.() !== code.uid || process.getegid?.() !== code.gid || process.getuid?.() !== 0) {
    // Never go on under another identity: the server's calls would run as it.
    console.error("the sandbox server could not take the code's identity back after binding its socket");
    process.exit(70);
  }
}
