import { describe, expect, it } from 'vitest';
import { LineDecoder, encodeFrame } from './framing.js';

function decoder(max = 16): { lines: string[]; oversize: number; push(s: string | Buffer): void } {
  const state = { lines: [] as string[], oversize: 0 };
  const d = new LineDecoder(
    max,
    (l) => state.lines.push(l),
    () => (state.oversize += 1),
  );
  return Object.assign(state, {
    push: (s: string | Buffer) => d.push(Buffer.isBuffer(s) ? s : Buffer.from(s)),
  });
}

describe('LineDecoder', () => {
  it('splits lines across and within chunks, ignores blank lines and a trailing CR', () => {
    const d = decoder();
    d.push('{"a"');
    d.push(':1}\n\n{"b":2}\r\n{"c"');
    expect(d.lines).toEqual(['{"a":1}', '{"b":2}']);
    d.push(':3}\n');
    expect(d.lines).toEqual(['{"a":1}', '{"b":2}', '{"c":3}']);
  });

  it('decodes a multi-byte character split between chunks', () => {
    const d = decoder();
    const bytes = Buffer.from('"ü"\n');
    d.push(bytes.subarray(0, 2));
    d.push(bytes.subarray(2));
    expect(d.lines).toEqual(['"ü"']);
  });

  it('reports an oversize line once, drops it up to its newline, and carries on', () => {
    const d = decoder(8);
    d.push('0123456');
    d.push('789abcdef');
    d.push('ghij\nok\n');
    expect(d.oversize).toBe(1);
    expect(d.lines).toEqual(['ok']);
    d.push('123456789\nfine\n');
    expect(d.oversize).toBe(2);
    expect(d.lines).toEqual(['ok', 'fine']);
  });
});

describe('encodeFrame', () => {
  it('splices already-encoded data into the frame', () => {
    expect(encodeFrame({ op: 'msg', sid: 1 }, '{"x":[1]}')).toBe('{"op":"msg","sid":1,"data":{"x":[1]}}\n');
    expect(encodeFrame({}, 'null')).toBe('{"data":null}\n');
    expect(encodeFrame({ op: 'ping' })).toBe('{"op":"ping"}\n');
  });
});
