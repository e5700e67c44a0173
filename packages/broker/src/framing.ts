/**
 * Newline-delimited JSON framing for the local broker socket: one JSON object per line, UTF-8.
 * JSON text never contains a raw newline (JSON.stringify escapes it), so a newline always ends a frame.
 */

/** Largest frame accepted on the socket: a full payload plus room for the envelope (subjects, ids). */
export const MAX_FRAME_BYTES = 1024 * 1024 + 16 * 1024;

const NEWLINE = 0x0a;

/**
 * Splits a byte stream into lines. Works on bytes, so a multi-byte character split across chunks is
 * decoded only once its line is complete. A line longer than `maxBytes` is reported once through
 * `onOversize` and skipped up to its newline; the stream then carries on.
 */
export class LineDecoder {
  private parts: Buffer[] = [];
  private size = 0;
  private discarding = false;

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversize: () => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl === -1 ? chunk.length : nl;
      const piece = chunk.subarray(start, end);
      if (!this.discarding) {
        if (this.size + piece.length > this.maxBytes) {
          this.discarding = true;
          this.parts = [];
          this.size = 0;
          this.onOversize();
        } else if (piece.length > 0) {
          this.parts.push(piece);
          this.size += piece.length;
        }
      }
      if (nl === -1) return;
      if (!this.discarding && this.size > 0) {
        const line = Buffer.concat(this.parts, this.size).toString('utf8').replace(/\r$/, '');
        this.parts = [];
        this.size = 0;
        if (line.trim() !== '') this.onLine(line);
      }
      this.discarding = false;
      this.parts = [];
      this.size = 0;
      start = nl + 1;
    }
  }
}

/** Serialises a frame. `rawData` is already-encoded JSON text spliced in as the `data` field. */
export function encodeFrame(frame: Record<string, unknown>, rawData?: string): string {
  const head = JSON.stringify(frame);
  if (rawData === undefined) return head + '\n';
  // `head` ends with "}"; an empty object is "{}".
  return head.length === 2 ? `{"data":${rawData}}\n` : `${head.slice(0, -1)},"data":${rawData}}\n`;
}
