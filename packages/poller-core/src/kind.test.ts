import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  classifyError,
  classifyHttpStatus,
  definePollerKind,
  isPollerKind,
  PermanentError,
  renderTemplate,
  safeReason,
  templatePlaceholders,
  TransientError,
  validateTemplate,
  withBaseConfig,
} from './index.js';
import { compileSchema } from '@agent/json-schema';

const base = {
  kind: 'demo',
  apiVersion: 1 as const,
  configSchema: withBaseConfig({}),
  placeholders: ['a'],
  tick: async () => ({ items: [] }),
};

describe('definePollerKind', () => {
  it('freezes and brands a valid definition', () => {
    const k = definePollerKind(base);
    expect(Object.isFrozen(k)).toBe(true);
    expect(isPollerKind(k)).toBe(true);
    expect(isPollerKind({ ...base })).toBe(false);
  });

  it.each([
    [{ kind: 'Bad-Name' }, 'POLLER_INVALID_KIND', /must match/],
    [{ apiVersion: 2 }, 'POLLER_KIND_API_VERSION', /apiVersion 2 is not supported/],
    [{ tick: undefined }, 'POLLER_INVALID_KIND', /tick must be a function/],
    [{ configSchema: { type: 'object', properties: {} } }, 'POLLER_INVALID_KIND', /must declare "deliver"/],
    [
      { configSchema: withBaseConfig({ properties: { x: { type: 'nonsense' } } }) },
      'POLLER_INVALID_KIND',
      /does not compile/,
    ],
    [{ placeholders: 'some' }, 'POLLER_INVALID_KIND', /placeholders/],
    [{ validateWithAccount: 'yes' }, 'POLLER_INVALID_KIND', /validateWithAccount must be a function/],
  ])('refuses %j', (over, code, text) => {
    let err: unknown;
    try {
      definePollerKind({ ...base, ...over } as never);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code });
    expect((err as Error).message).toMatch(text);
  });

  it('a kind name is at most 64 characters, and a long one is not repeated in full', () => {
    expect(definePollerKind({ ...base, kind: `k${'x'.repeat(63)}` }).kind).toHaveLength(64);
    let err: unknown;
    try {
      definePollerKind({ ...base, kind: `k${'x'.repeat(64)}` });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'POLLER_INVALID_KIND' });
    expect((err as Error).message).toBe(
      `kind "k${'x'.repeat(39)}…": name must match ^[a-z][a-z0-9_]{0,63}$ (lower case, digits, underscores)`,
    );
  });

  it('deliver: a channel is a plugin name of at most 64 characters, a recipient at most 256 without control characters', () => {
    const validate = compileSchema(withBaseConfig({}));
    const ok = (deliver: object) => validate({ message_template: 'x', deliver });
    expect(ok({ channel: 'chat_a', to: `+${'1'.repeat(255)}` })).toBe(true);
    expect(ok({ channel: 'c'.repeat(65), to: 'op' })).toBe(false);
    expect(ok({ channel: 'chat a', to: 'op' })).toBe(false);
    expect(ok({ channel: 'chat_a', to: 'o'.repeat(257) })).toBe(false);
    expect(ok({ channel: 'chat_a', to: 'op\nlevel=error' })).toBe(false);
  });
});

describe('errors', () => {
  it('classifies by code, never by instanceof or message', () => {
    expect(classifyError(new PermanentError('x'))).toBe('permanent');
    expect(classifyError({ code: 'POLLER_PERMANENT' })).toBe('permanent');
    expect(classifyError(new TransientError('401 in the text'))).toBe('transient');
    expect(classifyError(new Error('401 Unauthorized'))).toBe('transient');
  });

  it('classifyHttpStatus', () => {
    expect([200, 304, 401, 403, 404, 408, 425, 429, 500, 503].map(classifyHttpStatus)).toEqual([
      'ok',
      'ok',
      'permanent',
      'permanent',
      'permanent',
      'transient',
      'transient',
      'transient',
      'transient',
      'transient',
    ]);
  });

  it('safeReason drops query strings and userinfo and stays short', () => {
    expect(safeReason(new Error('GET https://u:pw@h.test/a/b?token=zzz#f failed'))).toBe(
      'GET https://h.test/a/b failed',
    );
    expect(safeReason('x'.repeat(500)).length).toBe(200);
  });
});

describe('templates', () => {
  it('renders placeholders literally, never re-expanding values', () => {
    expect(renderTemplate('{title} by {who}', { title: '{who}', who: 'ana' })).toBe('{who} by ana');
    expect(renderTemplate('{{literal}} {a}', { a: '1' })).toBe('{literal} 1');
    expect(renderTemplate('📞 {x} — teléfono', (n) => (n === 'x' ? 'ñ' : undefined))).toBe('📞 ñ — teléfono');
    expect(renderTemplate('{missing}!', {})).toBe('!');
  });

  it('lists and validates placeholders', () => {
    expect(templatePlaceholders('{a} {b} {a}')).toEqual(['a', 'b']);
    expect(validateTemplate('{a} {c}', ['a', 'b'])).toEqual([
      'unknown placeholder "{c}"; valid placeholders: {a}, {b}',
    ]);
    expect(validateTemplate('{anything}', 'any')).toEqual([]);
    expect(validateTemplate('oops }', ['a'])[0]).toMatch(/lone "}"/);
  });
});

/** What canonicalJson has always written: JSON.stringify with a replacer that sorts each object's keys. */
const byReplacer = (value: unknown): string =>
  JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );

describe('canonicalJson', () => {
  it('writes what JSON.stringify with sorted keys writes, for any JSON value and for undefined members', () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.anything({
          withDate: true,
          withNullPrototype: true,
          withSparseArray: true,
          withBoxedValues: false,
        }),
        (json, anything) => {
          expect(canonicalJson(json)).toBe(byReplacer(json));
          let expected: string | undefined;
          try {
            expected = byReplacer(anything);
          } catch {
            return; // BigInt and cycles: JSON.stringify throws, so does canonicalJson
          }
          expect(canonicalJson(anything)).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('lists integer keys first, ascending, as an object enumerates them', () => {
    expect(canonicalJson({ b: 1, 10: 'ten', '': 0, 9: 'nine', 4294967295: 'big', a: 2 })).toBe(
      '{"9":"nine","10":"ten","":0,"4294967295":"big","a":2,"b":1}',
    );
  });

  it('sorts keys by code unit and keeps dates as JSON writes them', () => {
    expect(canonicalJson({ b: 1, a: [{ z: undefined, y: new Date(0) }, undefined], B: 'x', é: true })).toBe(
      '{"B":"x","a":[{"y":"1970-01-01T00:00:00.000Z"},null],"b":1,"é":true}',
    );
  });
});
