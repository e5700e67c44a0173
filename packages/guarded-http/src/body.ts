/**
 * Streams a response body into a Buffer under a byte cap. Compressed bodies are decoded here (not
 * by undici), so the cap counts DECODED bytes as well as bytes on the wire: a gzip bomb stops at
 * the cap, after at most one decoder chunk more than the cap.
 */
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { GuardedHttpError } from './errors.js';

export const DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024;

/** The codings `Accept-Encoding` advertises and `readBody` decodes. */
export const ACCEPT_ENCODING = 'gzip, deflate, br';

type Coding = 'gzip' | 'deflate' | 'br';

/**
 * The codings of a `Content-Encoding` header in the order they were applied, or `undefined` if one
 * is unknown (then the body is returned as it came, still under the cap).
 */
function parseContentEncoding(header: string | undefined): Coding[] | undefined {
  if (header === undefined) return [];
  const out: Coding[] = [];
  for (const raw of header.split(',')) {
    const c = raw.trim().toLowerCase();
    if (c === '' || c === 'identity') continue;
    if (c === 'gzip' || c === 'x-gzip') out.push('gzip');
    else if (c === 'deflate') out.push('deflate');
    else if (c === 'br') out.push('br');
    else return undefined;
  }
  return out;
}

/**
 * `Content-Encoding: deflate` is meant to be zlib-wrapped, but some servers send raw deflate. Look
 * at the first two bytes and pick the matching inflater.
 */
class AutoInflate extends Transform {
  private inner: zlib.Inflate | zlib.InflateRaw | undefined;
  private pending: Buffer = Buffer.alloc(0);

  private start(first: Buffer): void {
    const b0 = first[0] ?? 0;
    const b1 = first[1] ?? 0;
    const zlibWrapped = (b0 & 0x0f) === 8 && ((b0 << 8) | b1) % 31 === 0;
    const inner = zlibWrapped ? zlib.createInflate() : zlib.createInflateRaw();
    inner.on('data', (d: Buffer) => {
      if (!this.push(d)) inner.pause();
    });
    inner.on('error', (err) => this.destroy(err));
    this.inner = inner;
  }

  override _read(size: number): void {
    this.inner?.resume();
    // Transform's own _read releases the pending write callback; it must still run.
    // oxlint-disable-next-line no-underscore-dangle
    super._read(size);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.inner === undefined) {
      this.pending = Buffer.concat([this.pending, chunk]);
      if (this.pending.length < 2) return cb();
      this.start(this.pending);
      chunk = this.pending;
      this.pending = Buffer.alloc(0);
    }
    this.inner!.write(chunk, () => cb());
  }

  override _flush(cb: TransformCallback): void {
    if (this.inner === undefined) {
      if (this.pending.length === 0) return cb();
      this.start(this.pending);
      this.inner!.write(this.pending);
    }
    const inner = this.inner!;
    inner.once('end', () => cb());
    inner.once('error', (err) => cb(err));
    inner.resume();
    inner.end();
  }

  override _destroy(err: Error | null, cb: (error: Error | null) => void): void {
    this.inner?.destroy();
    cb(err);
  }
}

function decoder(coding: Coding): Transform {
  // Flush modes matching undici's fetch: tolerate bodies that end without a final block marker.
  if (coding === 'gzip')
    return zlib.createGunzip({
      flush: zlib.constants.Z_SYNC_FLUSH,
      finishFlush: zlib.constants.Z_SYNC_FLUSH,
    });
  if (coding === 'br') {
    return zlib.createBrotliDecompress({
      flush: zlib.constants.BROTLI_OPERATION_FLUSH,
      finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH,
    });
  }
  return new AutoInflate();
}

export interface ReadBodyOptions {
  maxBytes: number;
  /** Content-Encoding header of the response. */
  contentEncoding: string | undefined;
  /** Content-Length header of the response, to fail before reading when it already exceeds the cap. */
  contentLength: string | undefined;
  /** For error messages. */
  url: string;
}

export interface ReadBodyResult {
  body: Buffer;
  /** True when a Content-Encoding was decoded. */
  decoded: boolean;
}

function tooLarge(url: string, maxBytes: number, what: string): GuardedHttpError {
  return new GuardedHttpError(
    'HTTP_BODY_TOO_LARGE',
    `Response from ${url} is larger than the ${maxBytes}-byte cap (${what}); raise maxBodyBytes if this size is expected.`,
    { url, limitBytes: maxBytes },
  );
}

export async function readBody(stream: Readable, opts: ReadBodyOptions): Promise<ReadBodyResult> {
  const { maxBytes, url } = opts;
  const declared = opts.contentLength === undefined ? NaN : Number(opts.contentLength);
  if (Number.isFinite(declared) && declared > maxBytes) {
    stream.destroy();
    throw tooLarge(url, maxBytes, `Content-Length ${declared}`);
  }
  const codings = parseContentEncoding(opts.contentEncoding) ?? [];
  const decoders = codings.toReversed().map(decoder);

  // The cap that fired. With two decoders, tearing the pipeline down can reject it with an AbortError of a
  // decoder instead of the error that stopped it; the cap is the cause.
  let capped: GuardedHttpError | undefined;
  const cap = (what: string): GuardedHttpError => (capped ??= tooLarge(url, maxBytes, what));
  let wire = 0;
  const countWire = async function* (source: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      wire += chunk.length;
      if (wire > maxBytes) throw cap('bytes received');
      yield chunk;
    }
  };
  let chunks: Buffer[] = [];
  let total = 0;
  const collect = async (source: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of source) {
      total += chunk.length;
      if (total > maxBytes) {
        chunks = []; // nothing of a refused body is kept while the pipeline winds down
        throw cap(decoders.length > 0 ? 'after decompression' : 'bytes received');
      }
      chunks.push(chunk);
    }
  };
  try {
    // Nothing to decode: the stream is read directly. A pipeline of one stage costs more than the read of a
    // small feed (its AbortController, aborted with a DOMException and its stack, at every end).
    if (decoders.length === 0) await collect(stream);
    else
      await (pipeline as (...streams: unknown[]) => Promise<void>)(stream, countWire, ...decoders, collect);
  } catch (err) {
    // A pipeline destroys its streams on failure; a direct read leaves that to us.
    if (decoders.length === 0) stream.destroy();
    throw capped ?? err;
  }
  return { body: Buffer.concat(chunks, total), decoded: decoders.length > 0 };
}
