/**
 * Raw HTTP/1.1 clients that hold a server's resources the way an attacker would: a request
 * whose body is sent slowly (how much of it was sent when the answer came), and connections
 * that send part of their headers and wait.
 */
import { connect, type Socket } from "node:net";

export interface SlowAnswer {
  /** The status of the answer, or 0 when the connection closed without one. */
  status: number;
  /** Body bytes the client had handed to the kernel when the first answer byte arrived. */
  sentWhenAnswered: number;
  totalBytes: number;
  /** Milliseconds from the first byte sent to the first answer byte (or the close). */
  answeredAfterMs: number;
}

/**
 * Sends `head` then `totalBytes` of body in `chunkBytes` pieces every `everyMs`, stopping as
 * soon as an answer arrives (or the connection closes).
 */
export function slowBody(
  url: string,
  head: string,
  options: { totalBytes: number; chunkBytes: number; everyMs: number },
): Promise<SlowAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const started = Date.now();
    let sent = 0;
    let received = "";
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
      resolve({
        status,
        sentWhenAnswered: sent,
        totalBytes: options.totalBytes,
        answeredAfterMs: Date.now() - started,
      });
      socket.destroy();
    };
    const chunk = Buffer.alloc(options.chunkBytes, 0x61);
    const more = () => {
      if (settled || socket.destroyed) return;
      if (sent >= options.totalBytes) return;
      const piece = chunk.subarray(0, Math.min(chunk.length, options.totalBytes - sent));
      socket.write(piece);
      sent += piece.length;
      timer = setTimeout(more, options.everyMs);
    };
    socket.on("data", (data) => {
      received += data.toString("latin1");
      if (received.includes("\r\n\r\n")) settle();
    });
    socket.on("error", settle);
    socket.on("close", settle);
    socket.on("connect", () => {
      socket.write(head);
      timer = setTimeout(more, options.everyMs);
    });
  });
}

export interface HeldConnection {
  socket: Socket;
  /** Resolves when the server closed it, with whatever it answered first. */
  closed: Promise<{ answer: string; afterMs: number }>;
}

/** A connection that sends the start of a request's headers and nothing more. */
export function partialHeaders(url: string): Promise<HeldConnection> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const started = Date.now();
    let answer = "";
    socket.on("data", (data) => {
      answer += data.toString("latin1");
    });
    const closed = new Promise<{ answer: string; afterMs: number }>((done) => {
      socket.on("close", () => done({ answer, afterMs: Date.now() - started }));
    });
    socket.on("error", () => undefined);
    socket.once("connect", () => {
      socket.write(`GET /healthz HTTP/1.1\r\nHost: ${hostname}\r\nX-Slow: `);
      resolve({ socket, closed });
    });
    socket.once("error", reject);
  });
}
