/**
 * A per-read inactivity timeout on a request body: a client that stops sending its body
 * for `timeoutMs` while the gateway is waiting for it is cut off (its socket destroyed), so
 * a slow sender cannot hold a connection, a call slot and its buffers for the whole request
 * timeout (which must outlast the longest execution). Only silence counts, not the body's
 * total time: a large upload over a slow link that keeps sending is never cut.
 *
 * It rides on the socket's own inactivity timer, which Node's HTTP parser refreshes on every
 * chunk it reads and every write. When the gateway is the slow side (the body's consumer is
 * applying back-pressure, so the socket is not read at all), the timer is re-armed instead:
 * the client is not at fault. Once the body is complete, or the response is finished (Node
 * then sets the keep-alive timeout itself), the timer is left alone.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** Whether a request declares a body: chunked, or a Content-Length above zero. */
export function declaresBody(headers: IncomingMessage["headers"]): boolean {
  if (headers["transfer-encoding"] !== undefined) return true;
  const length = Number(headers["content-length"] ?? 0);
  return Number.isFinite(length) && length > 0;
}

export function guardBodyReads(req: IncomingMessage, res: ServerResponse, timeoutMs: number): void {
  if (!declaresBody(req.headers)) return;
  const socket = req.socket;
  let settled = false;
  const settle = () => {
    if (settled) return;
    settled = true;
    res.off("timeout", onTimeout);
    // The handler may work on for long (an execution) without either side sending a byte.
    if (!res.writableFinished && !socket.destroyed) socket.setTimeout(0);
  };
  function onTimeout() {
    if (req.complete) return settle();
    if (req.readableLength >= req.readableHighWaterMark) {
      socket.setTimeout(timeoutMs); // the gateway is not reading: back-pressure, not a slow client
      return;
    }
    settle();
    socket.destroy();
  }
  // On the response: Node emits a socket timeout there for as long as it is the socket's
  // answer, and a handled timeout is not turned into a destroyed socket by Node itself.
  res.setTimeout(timeoutMs, onTimeout);
  req.once("end", settle);
  res.once("finish", () => {
    settled = true;
    res.off("timeout", onTimeout);
  });
}
