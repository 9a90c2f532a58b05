/**
 * An ioredis client whose commands issued in one turn of the event loop leave in one socket
 * write: the first command of a turn corks the connection's socket, and the socket is
 * uncorked once the turn's I/O callbacks have run (setImmediate), so the commands of
 * concurrent calls go out together (one writev). Order and the command count Redis sees are
 * what they would be command by command.
 *
 * ioredis' own auto-pipelining does the same, but through a Pipeline object per batch,
 * which copies every defined script and command onto itself: with a call's two scripts
 * alone in their batches (one client), that was more of the store's CPU per Execute than
 * the commands themselves (bench:exec-cpu). Used for a standalone or Sentinel server; a
 * Cluster keeps ioredis' auto-pipelining, which groups by node.
 */
import { type Command, Redis } from "ioredis";

type WriteableStream = Parameters<Redis["sendCommand"]>[1];

export class CoalescingRedis extends Redis {
  #corked: Redis["stream"] | undefined;

  override sendCommand(command: Command, stream?: WriteableStream): unknown {
    // Handshake commands (a stream given) and commands before the connection is up take
    // ioredis' own path untouched.
    if (stream === undefined && this.status === "ready") this.#cork();
    return super.sendCommand(command, stream);
  }

  #cork(): void {
    const socket = this.stream;
    if (socket === this.#corked || !socket?.writable) return;
    this.#corked = socket;
    socket.cork();
    setImmediate(() => {
      if (this.#corked === socket) this.#corked = undefined;
      socket.uncork();
    });
  }
}
