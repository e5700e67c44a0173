import { describe, expect, it } from 'vitest';
import { compilePattern, EXTRACT_INPUT_MAX_CHARS, extractOne, extractProblems } from './extract.js';

describe('extract', () => {
  it('returns capture group 1, trimmed, Unicode intact', () => {
    expect(extractOne(compilePattern('Teléfono:\\s*([^\\n]+)'), 'Hola\nTeléfono:  +34 600 ☎ \nfin')).toEqual({
      value: '+34 600 ☎',
    });
    expect(extractOne(compilePattern('Order (\\d+)'), 'no order here')).toEqual({
      value: undefined,
      timedOut: false,
    });
  });

  it('supports leading inline flags', () => {
    expect(extractOne(compilePattern('(?i)order #(\\d+)'), 'ORDER #42')).toEqual({ value: '42' });
  });

  it('a catastrophic pattern is stopped by the time limit instead of stalling', () => {
    const started = Date.now();
    const r = extractOne(compilePattern('(a+)+$'), `${'a'.repeat(5000)}!`);
    expect(r).toEqual({ value: undefined, timedOut: true });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('caps the input length', () => {
    const text = `${'x'.repeat(EXTRACT_INPUT_MAX_CHARS)}CODE 7`;
    expect(extractOne(compilePattern('CODE (\\d)'), text).value).toBeUndefined();
    expect(extractOne(compilePattern('CODE (\\d)'), `CODE 7${text}`).value).toBe('7');
  });

  it('reports invalid regexes, bad names and names that shadow built-ins', () => {
    const p = extractProblems({ ok: 'a(b)', bad: '(unclosed', 'bad-name': 'x', subject: 'y' }, ['subject']);
    expect(p.join('\n')).toMatch(/extract "bad": invalid regex/);
    expect(p.join('\n')).toMatch(/"bad-name" must be letters/);
    expect(p.join('\n')).toMatch(/"subject" is a built-in placeholder/);
    expect(p).toHaveLength(3);
  });
});
