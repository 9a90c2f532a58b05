/**
 * An egress sandbox's only way out is the gateway's filtering proxy (src/egress/), served on
 * a Unix socket in the sandbox's own directory. This attaches that socket, and takes it over
 * when the gateway process that served it is gone (a restarted or stopped replica), so a
 * session's egress outlives the replica that started its sandbox.
 *
 * The socket is bound under a temporary name and renamed into place: a rename is atomic, so
 * of several replicas taking over at once exactly one socket remains, and the others notice
 * theirs is not it and close.
 */
import { randomBytes } from "node:crypto";
import { rename, stat } from "node:fs/promises";
import net from "node:net";
import path from "node:path";

/** The gateway's side: the proxy itself (src/egress/egress-proxy.ts, bound to the policy). */
export interface SandboxEgress {
  /** Serves the sandbox's proxy on a Unix socket at `socketPath`. */
  open(sandboxId: string, socketPath: string): Promise<void>;
  close(sandboxId: string): Promise<void>;
  serves(sandboxId: string): boolean;
  /** Every sandbox whose proxy this process serves. */
  served(): string[];
  /**
   * The deployment's egress CA certificate (PEM) egress sandboxes are to trust, when the
   * proxy adds credentials (terminates TLS); undefined when it does not.
   */
  trustedCaPem?(): string | undefined;
}

/** Binds the proxy at `socketPath`, replacing whatever is there; false if another replica won a race. */
export async function attachEgressSocket(
  egress: SandboxEgress,
  sandboxId: string,
  socketPath: string,
): Promise<boolean> {
  const temporary = path.join(path.dirname(socketPath), `.egress-${randomBytes(6).toString("hex")}.sock`);
  await egress.open(sandboxId, temporary);
  try {
    const ours = (await stat(temporary)).ino;
    await rename(temporary, socketPath);
    if ((await stat(socketPath)).ino === ours) return true;
  } catch {
    // Renamed over by another replica, or the directory went with its sandbox.
  }
  await egress.close(sandboxId);
  return false;
}

/** True when something accepts connections on the socket. */
export function socketAnswers(socketPath: string, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(socketPath);
    const done = (answers: boolean) => {
      socket.destroy();
      resolve(answers);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}
