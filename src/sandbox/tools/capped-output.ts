/**
 * Collects one stream of a program's output up to a byte cap. Past the cap the bytes are
 * counted, not kept, so a program printing forever costs a counter, not memory; the text
 * ends with a marker saying how much was dropped.
 */
export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private omitted = 0;

  constructor(private readonly capBytes: number) {}

  push(chunk: Buffer): void {
    const room = this.capBytes - this.kept;
    if (room >= chunk.length) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
      return;
    }
    if (room > 0) {
      this.chunks.push(chunk.subarray(0, room));
      this.kept += room;
    }
    this.omitted += chunk.length - Math.max(room, 0);
  }

  get truncated(): boolean {
    return this.omitted > 0;
  }

  text(): string {
    const body = Buffer.concat(this.chunks, this.kept).toString("utf8");
    return this.truncated ? `${body}\n[output truncated: ${this.omitted} more bytes were not kept]\n` : body;
  }
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
    const keep = Math.min(this.marker.length - 1, data.length);
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
