/**
 * Lets a gVisor sandbox be checkpointed: runsc cannot save a socket backed by a host file
 * (`--host-uds=create`, the server's listening socket in its host directory), and a failed
 * checkpoint ends the sandbox. So before the gateway checkpoints one, the server stops
 * listening (`POST /sandbox/pause-listener`): it answers, closes every connection and its
 * listening socket, and removes the socket file where it may (else the gateway does). After a restore (or when the gateway gives
 * up on the checkpoint) the gateway sends SIGUSR2 (to tini, which passes it on) and the
 * server listens on the same path again. Nothing else in the sandbox changes: sessions,
 * interpreters and files stay as they are.
 */
import { rmSync } from "node:fs";
import type { Server } from "node:http";
import type { Logger } from "pino";
import type { SocketBinder } from "../user-code/socket-owner.js";

/** The signal that makes a paused server listen again. */
export const RELISTEN_SIGNAL = "SIGUSR2";
/** Time for the pause's own answer to reach the gateway before its connection is closed. */
const PAUSE_GRACE_MS = 50;

export class ListenerPause {
  private server: Server | undefined;
  private paused = false;

  constructor(
    private readonly socketPath: string,
    private readonly log: Logger,
    /** How the server made its socket (its directory's owner, umask included); else as the first listen did. */
    private readonly bindSocket: SocketBinder = legacyBind,
  ) {
    process.on(RELISTEN_SIGNAL, this.onSignal);
  }

  private readonly onSignal = () => void this.relisten();

  /** Stops answering the signal (the server is closing). */
  close(): void {
    process.off(RELISTEN_SIGNAL, this.onSignal);
  }

  attach(server: Server): void {
    this.server = server;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /**
   * Stops accepting at once; the connections (the pause's own answer among them) are closed a
   * moment later, then the socket file goes: the gateway checkpoints once it is gone.
   */
  pause(): void {
    const server = this.server;
    if (!server || this.paused) return;
    this.paused = true;
    server.close();
    setTimeout(() => {
      server.closeAllConnections();
      // In a sealed socket directory the gateway removes the file itself.
      try {
        this.bindSocket(() => rmSync(this.socketPath, { force: true }));
      } catch {
        // Not ours to remove here: the gateway does.
      }
      this.log.info("listener paused for a checkpoint");
    }, PAUSE_GRACE_MS);
  }

  private async relisten(): Promise<void> {
    const server = this.server;
    if (!server || !this.paused) return;
    try {
      // As the first listen made it: under gVisor the host-backed socket cannot be chmod-ed.
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        this.bindSocket(() => {
          rmSync(this.socketPath, { force: true });
          server.listen(this.socketPath, () => {
            server.off("error", reject);
            resolve();
          });
        });
      });
      this.paused = false;
      this.log.info("listening again after a pause");
    } catch (error) {
      this.log.error({ err: error }, "could not listen again after a pause");
    }
  }
}

/** Without a code user: the server's own identity, and a socket any user may connect to (listen.ts). */
function legacyBind<T>(bind: () => T): T {
  const umask = process.umask(0o111);
  try {
    return bind();
  } finally {
    process.umask(umask);
  }
}
