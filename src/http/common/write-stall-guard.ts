/**
 * Cuts off a client that stops reading its answer. Node buffers what a handler writes while
 * the socket is full, and nothing else bounds how long: a client that never reads (an exec of
 * megabytes of output, then silence) would hold that memory for as long as it keeps the
 * connection open, and many of them would exhaust the gateway. A long wait for the answer
 * itself (a five-minute exec) is not a stall: only a connection with bytes waiting to be sent
 * and none sent for `stallMs` is destroyed.
 */
import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";

interface Progress {
  /** The socket's backlog when it was last seen moving (Node counts buffered bytes as written). */
  backlog: number;
  /** libuv's unsent bytes then: the only count that moves while one large write drains. */
  unsent: number;
  since: number;
}

/**
 * Bytes libuv has not yet handed to the kernel. `writableLength` counts a write until all of
 * it is sent, so a 50 MB answer written at once would look stalled the whole time a client
 * reads it; the handle's write queue shrinks with every partial write.
 */
function unsentOf(socket: Socket): number {
  const handle = (socket as Socket & { _handle?: { writeQueueSize?: number } })._handle;
  return handle?.writeQueueSize ?? 0;
}

export class WriteStallGuard {
  private readonly watched = new Map<ServerResponse, Progress | undefined>();
  private readonly timer: NodeJS.Timeout;
  private readonly everyMs: number;
  private lastSweep = Date.now();

  constructor(private readonly stallMs: number) {
    this.everyMs = Math.max(50, Math.floor(stallMs / 4));
    this.timer = setInterval(() => this.sweep(), this.everyMs);
    this.timer.unref();
  }

  watch(res: ServerResponse): void {
    this.watched.set(res, undefined);
    res.once("close", () => this.watched.delete(res));
  }

  close(): void {
    clearInterval(this.timer);
  }

  private sweep(): void {
    const now = Date.now();
    // Time the gateway itself did not run (a blocked event loop, a starved CPU) is not the
    // client's: timers run before the I/O that would have drained the socket, so a late sweep
    // would see an unmoved backlog and cut off a client that was reading all along.
    const lag = now - this.lastSweep - this.everyMs;
    this.lastSweep = now;
    if (lag > this.everyMs) {
      for (const progress of this.watched.values()) if (progress) progress.since += lag;
    }
    for (const [res, progress] of this.watched) {
      const socket = res.socket;
      if (!socket || socket.writableLength === 0) {
        if (progress) this.watched.set(res, undefined);
      } else if (
        !progress ||
        progress.backlog !== socket.writableLength ||
        progress.unsent !== unsentOf(socket)
      ) {
        this.watched.set(res, { backlog: socket.writableLength, unsent: unsentOf(socket), since: now });
      } else if (now - progress.since >= this.stallMs) {
        this.watched.delete(res);
        socket.destroy();
      }
    }
  }
}
