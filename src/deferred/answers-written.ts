/**
 * Resolves once the answers this turn of the event loop made are written: an answer is
 * written in the turn of the I/O that completed it (the handler's promises are microtasks,
 * and so is @hono/node-server's write), and setImmediate runs after that turn and before the
 * loop reads anything new. Work no answer waits for (settling an Execute, counting a
 * request) runs then, off the time its client waits; and since a client's next request is
 * read only after it, that request still finds the work done, or begun (queued in order).
 *
 * One promise a turn, however many answers it wrote.
 */
let pending: Promise<void> | undefined;

export function answersWritten(): Promise<void> {
  pending ??= new Promise((resolve) => {
    setImmediate(() => {
      pending = undefined;
      resolve();
    });
  });
  return pending;
}
