import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_LENGTH, splitText } from './split-text.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const stripBlanks = (s: string): string => s.replace(/[ \n]/g, '');

describe('splitText', () => {
  it('keeps texts up to the limit in one part', () => {
    expect(splitText('hello')).toEqual(['hello']);
    const exact = 'x'.repeat(MAX_MESSAGE_LENGTH);
    expect(splitText(exact)).toEqual([exact]);
  });

  it('prefers a newline, then a space, in the second half of the window', () => {
    expect(splitText('aaaa bb\ncc dd', 10)).toEqual(['aaaa bb', 'cc dd']);
    expect(splitText('aaaa bbbb cccc', 10)).toEqual(['aaaa bbbb', 'cccc']);
    // A newline too early would leave a tiny part: the space later in the window wins.
    expect(splitText('a\nbbbbb cccccc', 10)).toEqual(['a\nbbbbb', 'cccccc']);
  });

  it('cuts hard when there is no boundary, but never inside a surrogate pair', () => {
    expect(splitText('abcdefghijkl', 5)).toEqual(['abcde', 'fghij', 'kl']);
    const parts = splitText('ab😀cd', 3);
    expect(parts).toEqual(['ab', '😀c', 'd']);
    for (const p of parts) expect(LONE_SURROGATE.test(p)).toBe(false);
  });

  it('holds its invariants over many generated texts', () => {
    let seed = 12345;
    const next = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    const alphabet = ['a', 'b', ' ', '\n', '😀', 'é', '𝄞'];
    for (let round = 0; round < 2000; round++) {
      const max = 2 + (next() % 9);
      const length = next() % 40;
      let text = '';
      for (let i = 0; i < length; i++) text += alphabet[next() % alphabet.length];
      const parts = splitText(text, max);
      for (const p of parts) {
        expect(p.length).toBeLessThanOrEqual(max);
        expect(LONE_SURROGATE.test(p)).toBe(false);
      }
      if (text.length <= max) expect(parts).toEqual([text]);
      else for (const p of parts) expect(p.trim()).not.toBe('');
      expect(stripBlanks(parts.join(''))).toBe(stripBlanks(text));
    }
  });

  it('never yields a blank part', () => {
    expect(splitText('abcd\n', 4)).toEqual(['abcd']);
    const parts = splitText('ab' + ' '.repeat(10) + 'cd', 4);
    expect(parts.every((p) => p.trim() !== '' && p.length <= 4)).toBe(true);
    expect(stripBlanks(parts.join(''))).toBe('abcd');
  });

  it('refuses a limit below 2', () => {
    expect(() => splitText('abc', 1)).toThrow(RangeError);
  });
});
