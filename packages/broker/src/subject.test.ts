import { describe, expect, it } from 'vitest';
import { syncErrorOf } from '../test/helpers.js';
import { decodePayload, encodePayload } from './payload.js';
import { assertSubject, subjectMatches } from './subject.js';

describe('subjects', () => {
  it.each([
    ['control.reload', 'control.reload', true],
    ['control.*', 'control.reload', true],
    ['control.*', 'control.reload.ack', false],
    ['control.>', 'control.reload.ack', true],
    ['control.>', 'control', false],
    ['*.reload.ack', 'control.reload.ack', true],
    ['>', 'anything.at.all', true],
    ['control.reload', 'control.reload.ack', false],
  ])('pattern %s on %s matches: %s', (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected);
  });

  it.each(['', 'a..b', '.a', 'a.', 'a b', 'a\tb', 'a.\u0000', 'x'.repeat(600)])('refuses %j', (subject) => {
    expect(syncErrorOf(() => assertSubject(subject, true)).code).toBe('BROKER_INVALID_SUBJECT');
  });

  it('allows wildcards only when subscribing, and ">" only last', () => {
    expect(() => assertSubject('a.*.c', true)).not.toThrow();
    expect(() => assertSubject('a.>', true)).not.toThrow();
    expect(syncErrorOf(() => assertSubject('a.*', false)).code).toBe('BROKER_INVALID_SUBJECT');
    expect(syncErrorOf(() => assertSubject('a.>.c', true)).message).toContain('last token');
    expect(syncErrorOf(() => assertSubject('a.b*', true)).message).toContain('whole tokens');
    expect(syncErrorOf(() => assertSubject(42, true)).code).toBe('BROKER_INVALID_SUBJECT');
  });
});

describe('payloads', () => {
  it('encodes JSON, undefined as null, and decodes an empty body as null', () => {
    expect(encodePayload({ a: [1, 'ü'] })).toBe('{"a":[1,"ü"]}');
    expect(encodePayload(undefined)).toBe('null');
    expect(decodePayload('')).toBeNull();
    expect(decodePayload('{"a":1}')).toEqual({ a: 1 });
  });

  it('refuses values JSON cannot carry, oversize payloads and bad JSON text', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(syncErrorOf(() => encodePayload(cyclic)).code).toBe('BROKER_BAD_PAYLOAD');
    expect(syncErrorOf(() => encodePayload(() => 1)).code).toBe('BROKER_BAD_PAYLOAD');
    expect(syncErrorOf(() => encodePayload('ab', 3)).code).toBe('BROKER_PAYLOAD_TOO_LARGE');
    expect(syncErrorOf(() => decodePayload('{nope')).code).toBe('BROKER_BAD_PAYLOAD');
  });
});
