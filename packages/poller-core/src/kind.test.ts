import { describe, expect, it } from 'vitest';
import {
  classifyError,
  classifyHttpStatus,
  definePollerKind,
  isPollerKind,
  PermanentError,
  renderTemplate,
  safeReason,
  hashSourceKey,
  sourceKeyOf,
  templatePlaceholders,
  TransientError,
  validateTemplate,
  withBaseConfig,
} from './index.js';
import { sameSource } from './kind.js';
import { compileSchema } from './schema.js';

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

describe('sourceKeyOf', () => {
  it('ignores template, deliver, max_per_tick and dispatch_delay_ms', () => {
    const k = definePollerKind(base);
    const a = sourceKeyOf(k, {
      url: 'u',
      message_template: 'a',
      deliver: { channel: 'c', to: 't' },
      max_per_tick: 1,
    });
    const b = sourceKeyOf(k, { message_template: 'b', url: 'u', dispatch_delay_ms: 9 });
    expect(a).toBe(b);
    expect(sourceKeyOf(k, { url: 'v' })).not.toBe(a);
  });

  it('is a hash of the identity: no config value, URL or secret in it', () => {
    const k = definePollerKind({ ...base, sourceKey: (c: Record<string, unknown>) => String(c.url) });
    const key = sourceKeyOf(k, { url: 'https://api.example.org/tok-5f2e9a/items' });
    expect(key).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(key).toBe(hashSourceKey('demo:https://api.example.org/tok-5f2e9a/items'));
    expect(sourceKeyOf(definePollerKind(base), { url: 'tok-5f2e9a' })).not.toContain('tok-5f2e9a');
  });

  it('accepts a key stored before keys were hashed for the same source, and nothing else', () => {
    const k = definePollerKind(base);
    const current = sourceKeyOf(k, { url: 'u' });
    expect(sameSource(current, current)).toBe(true);
    expect(sameSource('demo:{"url":"u"}', current)).toBe(true);
    expect(sameSource('demo:{"url":"v"}', current)).toBe(false);
    expect(sameSource(sourceKeyOf(k, { url: 'v' }), current)).toBe(false);
    expect(sameSource(null, current)).toBe(false);
    // A hash is not taken for the identity it hashes.
    expect(sameSource(hashSourceKey(current), current)).toBe(false);
    expect(sameSource(current, hashSourceKey(current))).toBe(true);
  });
});
