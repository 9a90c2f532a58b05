/**
 * The per-sandbox socket directories: `<socketDir>/<deployment>/<sandbox id>/`, mounted at
 * /run/sandpool in the sandbox. Its server listens there on a Unix socket, the only way into
 * a box that has no network.
 *
 * The directory is the gateway's and never writable by anyone else, at any moment: the
 * sandbox's server makes its socket as the directory's owner (src/sandbox/user-code/
 * socket-owner.ts: a socket only the gateway may connect to), so while the sandbox starts,
 * and while it listens again after a checkpoint, the directory is 0711 (the gateway's alone to
 * write; the server, as the code's uid, may reach the egress socket through it). Sealed (0555)
 * once the server answers, before any user code runs: from then on not even the server, let
 * alone user code, can put a byte on the host's disk through it.
 */
import { chmod, mkdir, readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { EGRESS_SOCKET_NAME } from "./container-spec.js";
import { SANDBOX_SOCKET_NAME } from "./docker-runtime-options.js";

/** rwx--x--x: see the file's comment. Never 0777: code in the sandbox could write on the host. */
const SERVER_MAY_BIND = 0o711;

export class SocketDirs {
  readonly root: string;

  constructor(socketDir: string, deployment: string) {
    this.root = path.join(socketDir, deployment);
  }

  dirOf(sandboxId: string): string {
    return path.join(this.root, sandboxId);
  }

  socketOf(sandboxId: string): string {
    return path.join(this.dirOf(sandboxId), SANDBOX_SOCKET_NAME);
  }

  egressSocketOf(sandboxId: string): string {
    return path.join(this.dirOf(sandboxId), EGRESS_SOCKET_NAME);
  }

  /** Runs `change` with the sealed directory writable by the gateway alone (never by the sandbox). */
  async whileUnsealed<T>(sandboxId: string, change: () => Promise<T>): Promise<T> {
    await chmod(this.dirOf(sandboxId), 0o755);
    try {
      return await change();
    } finally {
      await this.seal(sandboxId).catch(() => undefined);
    }
  }

  /** A fresh, empty directory the sandbox's server may create its socket in (as the gateway's uid). */
  async prepare(sandboxId: string): Promise<string> {
    // Only the gateway (and root) may list the deployment's directories.
    await mkdir(this.root, { recursive: true, mode: 0o700 });
    const dir = this.dirOf(sandboxId);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { mode: 0o700 });
    await this.open(sandboxId);
    return dir;
  }

  /**
   * Writable by the gateway's uid alone, which the sandbox's server binds its socket as;
   * traversable (not listable) by others. mkdir's mode is cut by the umask, hence a chmod.
   */
  open(sandboxId: string): Promise<void> {
    return chmod(this.dirOf(sandboxId), SERVER_MAY_BIND);
  }

  /** No more writes from the sandbox: called once its server answers, before it is leased. */
  seal(sandboxId: string): Promise<void> {
    return chmod(this.dirOf(sandboxId), 0o555);
  }

  async remove(sandboxId: string): Promise<void> {
    const dir = this.dirOf(sandboxId);
    // A sealed directory's entries can only be removed once it is writable again.
    await chmod(dir, 0o700).catch(() => undefined);
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  }

  /**
   * Removes directories of sandboxes that no longer exist (their destroy was interrupted).
   * Young ones are left alone: a start in progress makes its directory before its container.
   */
  async sweep(existing: ReadonlySet<string>, olderThan: number): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch {
      return [];
    }
    const removed: string[] = [];
    for (const name of names) {
      if (existing.has(name)) continue;
      const info = await stat(this.dirOf(name)).catch(() => undefined);
      if (!info || info.mtimeMs >= olderThan) continue;
      // One directory that cannot go (EBUSY, EACCES) must not stop reconciliation: next time.
      const gone = await this.remove(name).then(
        () => true,
        () => false,
      );
      if (gone) removed.push(name);
    }
    return removed;
  }
}
