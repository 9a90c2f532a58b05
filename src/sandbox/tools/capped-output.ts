/**
 * Collects one stream of a program's output up to a byte cap. Past the cap the bytes are
 * counted, not kept, so a program printing forever costs a counter, not memory; the text
 * ends with a marker saying how much was dropped.
 */
/** Hears a call's output as it is kept, stream by stream (a streamed Execute). */
export type OutputListener = (stream: "stdout" | "stderr", chunk: Buffer) => void;

/** The two capped streams of one call, wired to `listener` when there is one. */
export function cappedStreams(
  capBytes: number,
  listener?: OutputListener,
): { out: CappedOutput; err: CappedOutput } {
  return {
    out: new CappedOutput(capBytes, listener && ((chunk) => listener("stdout", chunk))),
    err: new CappedOutput(capBytes, listener && ((chunk) => listener("stderr", chunk))),
  };
}

export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private omitted = 0;
  /** The server's own words (timed out, restarted): shown after the marker, never cut. */
  private readonly notes: string[] = [];

  private tailSent = false;

  /**
   * `onKept`, when given, hears every byte as it is kept (so a streamed call shows output as
   * it happens, under the same cap), then once, from `text()`, the marker and notes.
   */
  constructor(
    private readonly capBytes: number,
    private readonly onKept?: (chunk: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    const room = this.capBytes - this.kept;
    if (room >= chunk.length) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
      if (chunk.length > 0) this.onKept?.(chunk);
      return;
    }
    if (room > 0) {
      const head = chunk.subarray(0, room);
      this.chunks.push(head);
      this.kept += room;
      this.onKept?.(head);
    }
    this.omitted += chunk.length - Math.max(room, 0);
  }

  /** Adds a short message of the server's own after the output, whether or not it was cut. */
  note(text: string): void {
    this.notes.push(text);
  }

  get truncated(): boolean {
    return this.omitted > 0;
  }

  /** The output kept, cut further if JSON would blow it up (JSON_COST_FACTOR), then the marker and notes. */
  text(): string {
    const kept = Buffer.concat(this.chunks, this.kept).toString("utf8");
    const maxCost = this.capBytes * JSON_COST_FACTOR;
    const body = jsonCost(kept) <= maxCost ? kept : headWithinJsonCost(kept, maxCost - MARKER_ROOM_BYTES);
    const omitted = this.omitted + this.kept - Buffer.byteLength(body);
    const tail = `${omitted > 0 ? truncationMarker(omitted) : ""}${this.notes.join("")}`;
    if (this.onKept && !this.tailSent && tail.length > 0) this.onKept(Buffer.from(tail));
    this.tailSent = true;
    return `${body}${tail}`;
  }
}

/**
 * The one marker every truncated tool output ends with, so a model (and a test) can tell a
 * cut answer from a complete one. `hint` says how to see the rest, where there is a way.
 */
export function truncationMarker(omittedBytes: number, hint?: string): string {
  return `\n[output truncated: ${omittedBytes} more bytes were not kept${hint ? `; ${hint}` : ""}]\n`;
}

/** Room kept for the marker when a text must fit a cap marker included. */
export const MARKER_ROOM_BYTES = 256;

/**
 * `text` if it fits in `capBytes` (UTF-8), else its head cut on a character boundary plus
 * the marker, the whole no longer than `capBytes`: for answers built as one string (the
 * editor's), where a message can echo a huge input.
 */
export function capText(text: string, capBytes: number): string {
  const bytes = Buffer.byteLength(text);
  if (bytes <= capBytes) return text;
  const head = headWithin(text, Math.max(0, capBytes - MARKER_ROOM_BYTES));
  return `${head}${truncationMarker(bytes - Buffer.byteLength(head))}`;
}

/** The longest prefix of `text` whose UTF-8 form fits in `maxBytes`, never half a character. */
export function headWithin(text: string, maxBytes: number): string {
  // A UTF-16 unit is at most 3 UTF-8 bytes (a surrogate pair is 4 for 2 units), so this many
  // units always fit; cutting the encoded bytes is then refined to a character boundary.
  let units = text.slice(0, maxBytes);
  // Never end on the first half of a surrogate pair: alone it would encode as U+FFFD.
  if (/[\uD800-\uDBFF]$/.test(units)) units = units.slice(0, -1);
  const encoded = Buffer.from(units);
  if (encoded.length <= maxBytes) return units;
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so the cut lands before a character's first byte.
  while (end > 0 && (encoded[end]! & 0xc0) === 0x80) end--;
  return encoded.subarray(0, end).toString("utf8");
}

/**
 * Watches a stream for an end-of-call marker written by the program after its output, so
 * output and completion stay in order even though they travel on different pipes. Bytes
 * before the marker go to the current capture; a marker split across chunks is still found.
 */
export class MarkedStreamReader {
  private pending: Buffer = Buffer.alloc(0);
  private capture: CappedOutput | undefined;
  private marker: Buffer | undefined;
  private onMarker: (() => void) | undefined;

  /** Starts a capture that ends when `marker` is seen; resolves when it is. */
  begin(capture: CappedOutput, marker: string): Promise<void> {
    this.capture = capture;
    this.marker = Buffer.from(marker);
    this.pending = Buffer.alloc(0);
    return new Promise((resolve) => {
      this.onMarker = resolve;
    });
  }

  /** Ends the capture without a marker (the program died): whatever is pending is kept. */
  abandon(): void {
    if (this.capture && this.pending.length > 0) this.capture.push(this.pending);
    this.reset();
  }

  write(chunk: Buffer): void {
    if (!this.capture || !this.marker) return; // output between calls belongs to no call
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const at = data.indexOf(this.marker);
    if (at >= 0) {
      this.capture.push(data.subarray(0, at));
      const done = this.onMarker;
      this.reset();
      done?.();
      return;
    }
    // Hold back only a tail that could be the marker's start, so output is not delayed.
    const keep = markerStartAtEnd(data, this.marker);
    this.capture.push(data.subarray(0, data.length - keep));
    this.pending = Buffer.from(data.subarray(data.length - keep));
  }

  private reset(): void {
    this.capture = undefined;
    this.marker = undefined;
    this.onMarker = undefined;
    this.pending = Buffer.alloc(0);
  }
}

/** Length of the longest tail of `data` that is a proper prefix of `marker` (0 if none). */
function markerStartAtEnd(data: Buffer, marker: Buffer): number {
  const first = marker[0]!;
  // Longest first: candidates from the earliest place a proper prefix could start.
  for (let at = data.indexOf(first, Math.max(0, data.length - marker.length + 1)); at >= 0; ) {
    const tail = data.subarray(at);
    if (tail.equals(marker.subarray(0, tail.length))) return tail.length;
    at = data.indexOf(first, at + 1);
  }
  return 0;
}

/**
 * How many times the byte cap a stream may take once JSON-escaped. Text with many line
 * breaks or tabs doubles in JSON and still fits; control characters, which JSON writes as
 * six bytes each, are cut, so a sound sandbox's answer stays near 2 x 2 x the cap whatever
 * a program prints (the gateway buffers answers, many at once).
 */
export const JSON_COST_FACTOR = 2;

const TRAILING_MARKER = /\n\[output truncated: (\d+) more bytes were not kept([^\n]*)\]\n$/;

/** Bytes `text` takes inside a JSON string, as JSON.stringify escapes it, in UTF-8. */
export function jsonCost(text: string): number {
  return Buffer.byteLength(JSON.stringify(text)) - 2;
}

/**
 * `text` if its JSON form takes at most `maxCost` bytes; else its longest head that does
 * (marker included), the marker counting every byte left out, earlier cuts included.
 */
export function capJsonCost(text: string, maxCost: number): string {
  if (jsonCost(text) <= maxCost) return text;
  const earlier = TRAILING_MARKER.exec(text);
  const body = earlier ? text.slice(0, earlier.index) : text;
  const alreadyOmitted = earlier ? Number(earlier[1]) : 0;
  const head = headWithinJsonCost(body, maxCost - MARKER_ROOM_BYTES);
  const omitted = alreadyOmitted + Buffer.byteLength(body) - Buffer.byteLength(head);
  return `${head}${truncationMarker(omitted)}`;
}

/** The longest head of `text` whose JSON form takes at most `maxCost` bytes, never half a pair. */
function headWithinJsonCost(text: string, maxCost: number): string {
  // Binary search on the length of the head: only output over the bound pays for it.
  let low = 0;
  let high = text.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (jsonCost(text.slice(0, middle)) <= maxCost) low = middle;
    else high = middle - 1;
  }
  const head = text.slice(0, low);
  return /[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head;
}
