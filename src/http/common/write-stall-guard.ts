/**
 * Cuts off a client that stops reading its answer. Node buffers what a handler writes while
 * the socket is full, and nothing else bounds how long: a client that never reads (an exec of
 * megabytes of output, then silence) would hold that memory for as long as it keeps the
 * connection open, and many of them would exhaust the gateway. A long wait for the answer
 * itself (a five-minute exec) is not a stall: only a connection with bytes waiting to be sent
 * and none sent for `stallMs` is destroyed.
 */
import type { ServerResponse } from "node:http";

interface Progress {
  /** The socket's backlog when it was last seen moving (Node counts buffered bytes as written). */
  backlog: number;
  since: number;
}

export class WriteStallGuard {
  private readonly watched = new Map<ServerResponse, Progress | undefined>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly stallMs: number) {
    this.timer = setInterval(() => this.sweep(), Math.max(50, Math.floor(stallMs / 4)));
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
    for (const [res, progress] of this.watched) {
      const socket = res.socket;
      if (!socket || socket.writableLength === 0) {
        if (progress) this.watched.set(res, undefined);
      } else if (!progress || progress.backlog !== socket.writableLength) {
        this.watched.set(res, { backlog: socket.writableLength, since: now });
      } else if (now - progress.since >= this.stallMs) {
        this.watched.delete(res);
        socket.destroy();
      }
    }
  }
}
