/** Calls `onLine` with each newline-terminated line a stream carries (utf-8, without the newline). */
import type { Readable } from "node:stream";

export function readLines(stream: Readable, onLine: (line: string) => void): void {
  let buffered = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf("\n");
    while (newline >= 0) {
      onLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf("\n");
    }
  });
  stream.on("error", () => {});
}
