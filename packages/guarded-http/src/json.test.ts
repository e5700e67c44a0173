import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../test/servers.js';
import { createGuardedHttp } from './client.js';
import { GuardedHttpError } from './errors.js';
import { checkJsonDepth, DEFAULT_JSON_MAX_DEPTH, parseJson, parseJsonAsync } from './json.js';

const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(GuardedHttpError);
    return (err as GuardedHttpError).code;
  }
  return 'no error';
}

describe('parseJsonAsync', () => {
  it('gives what JSON.parse gives, whatever the size of the pieces handed to JSON.parse', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue(),
        fc.integer({ min: 1, max: 64 }),
        fc.boolean(),
        async (v, leaf, pretty) => {
          const text = JSON.stringify(v, null, pretty ? 2 : undefined);
          expect(await parseJsonAsync(text, { leafChars: leaf, maxDepth: 1000 })).toStrictEqual(
            JSON.parse(text),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses what JSON.parse refuses', async () => {
    const bad = [
      '',
      ' ',
      '[1,]',
      '{"a":1,}',
      '[1 2]',
      '{"a" 1}',
      '{a:1}',
      '[01]',
      '["a\\x"]',
      '["unclosed]',
      '[1]]',
      '[[1]',
      '{"a":[1}',
      '[1] x',
      'tru',
      '[-]',
      '{"a":1 "b":2}',
      '[,1]',
      '[1,,2]',
    ];
    for (const text of bad) {
      expect(() => JSON.parse(text), text).toThrow();
      for (const leafChars of [1, 4, 1024])
        expect(await codeOf(parseJsonAsync(text, { leafChars })), `${text} leaf ${leafChars}`).toBe(
          'HTTP_INVALID_JSON',
        );
    }
  });

  it('agrees with JSON.parse on arbitrary text', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ unit: fc.constantFrom(...'[]{}",:01 -tru\\ae'.split('')), maxLength: 24 }),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        fc.integer({ min: 1, max: 8 }),
        async (text, leafChars) => {
          let expected: unknown;
          let ok = true;
          try {
            expected = JSON.parse(text);
          } catch {
            ok = false;
          }
          if (ok) expect(await parseJsonAsync(text, { leafChars, maxDepth: 1000 })).toStrictEqual(expected);
          else
            expect(await codeOf(parseJsonAsync(text, { leafChars, maxDepth: 1000 }))).toBe(
              'HTTP_INVALID_JSON',
            );
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('keeps __proto__ an own key and the last of duplicate keys, like JSON.parse', async () => {
    const text = '{"__proto__":{"polluted":1},"a":1,"a":2,"b":{"__proto__":[1]}}';
    const v = (await parseJsonAsync(text, { leafChars: 1 })) as Record<string, unknown>;
    expect(v).toStrictEqual(JSON.parse(text));
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.hasOwn(v, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses nesting beyond the cap with HTTP_JSON_TOO_DEEP naming the depth, not a stack overflow', async () => {
    for (const text of [nested(100_000), `{"a":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_001)}`]) {
      const err = await parseJsonAsync(text).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GuardedHttpError);
      expect((err as GuardedHttpError).code).toBe('HTTP_JSON_TOO_DEEP');
      expect((err as Error).message).toContain(`deeper than ${DEFAULT_JSON_MAX_DEPTH} levels`);
    }
    expect(await parseJsonAsync(nested(DEFAULT_JSON_MAX_DEPTH))).toBeInstanceOf(Array);
    expect(await codeOf(parseJsonAsync(nested(DEFAULT_JSON_MAX_DEPTH + 1)))).toBe('HTTP_JSON_TOO_DEEP');
    expect(await codeOf(parseJsonAsync(nested(11), { maxDepth: 10 }))).toBe('HTTP_JSON_TOO_DEEP');
    // Brackets inside strings are text.
    expect(await parseJsonAsync(`["${'['.repeat(1000)}"]`)).toEqual(['['.repeat(1000)]);
  });

  it('lets the event loop run while it parses a large body', async () => {
    const text = JSON.stringify({
      items: Array.from({ length: 100_000 }, (_, i) => ({ id: `e-${i}`, n: i })),
    });
    let turns = 0;
    let running = true;
    const spin = (): void => {
      turns++;
      if (running) setImmediate(spin);
    };
    setImmediate(spin);
    const v = (await parseJsonAsync(text, { sliceMs: 1 })) as { items: unknown[] };
    running = false;
    expect(v.items).toHaveLength(100_000);
    expect(v).toStrictEqual(JSON.parse(text));
    expect(turns).toBeGreaterThan(1);
  });
});

describe('parseJson and checkJsonDepth', () => {
  it('apply the same cap synchronously', async () => {
    expect(parseJson('{"a":[1,2]}')).toEqual({ a: [1, 2] });
    expect(await codeOf(() => parseJson(nested(100_000)))).toBe('HTTP_JSON_TOO_DEEP');
    expect(await codeOf(() => parseJson('[1,'))).toBe('HTTP_INVALID_JSON');
    expect(await codeOf(() => checkJsonDepth(nested(5), 4))).toBe('HTTP_JSON_TOO_DEEP');
    expect(await codeOf(() => checkJsonDepth(nested(4), 4))).toBe('no error');
  });
});

describe('GuardedResponse.json', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.url === '/deep' ? nested(100_000) : '{"ok":true}');
    });
  });
  afterAll(() => server.close());

  it('refuses a deeply nested body with HTTP_JSON_TOO_DEEP, naming the URL', async () => {
    const http = createGuardedHttp();
    try {
      const res = await http.request(`${server.origin}/deep`, { allowPrivateNetworks: true });
      const err = await Promise.resolve()
        .then(() => res.json())
        .catch((e: unknown) => e);
      expect((err as GuardedHttpError).code).toBe('HTTP_JSON_TOO_DEEP');
      expect((err as Error).message).toContain(`${server.origin}/deep`);
      const ok = await http.request(`${server.origin}/ok`, { allowPrivateNetworks: true });
      expect(ok.json()).toEqual({ ok: true });
    } finally {
      await http.close();
    }
  });
});
