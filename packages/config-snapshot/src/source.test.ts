import { describe, expect, it } from 'vitest';
import { holdsReference } from './refs.js';
import { parseYamlText } from './source.js';

const names = { rel: 'x.yaml', abs: '/cfg/x.yaml', display: 'cfg/x.yaml' };
const parse = (text: string) => parseYamlText(text, names, 'global');
const valueOf = (text: string) => {
  const r = parse(text);
  expect(r.issues).toEqual([]);
  return r.src!.value;
};

describe('parseYamlText', () => {
  it.each([
    ['1', 1],
    ['-1', -1],
    ['012', 12],
    ['0o17', 15],
    ['0x1F', 31],
    ['1e3', 1000],
    ['.5', 0.5],
    ['-.inf', -Infinity],
    ['~', null],
    ['', null],
    ['Null', null],
    ['TRUE', true],
    // YAML 1.1 forms are strings in the 1.2 core schema.
    ['yes', 'yes'],
    ['off', 'off'],
    ['0b101', '0b101'],
    ['1_000', '1_000'],
    ['12:30', '12:30'],
    ['2026-01-31T00:00:00Z', '2026-01-31T00:00:00Z'],
    ['"1"', '1'],
    ['!!str 1', '1'],
  ])('reads `k: %s` with the YAML 1.2 core schema', (scalar, expected) => {
    expect(valueOf(`k: ${scalar}`)).toEqual({ k: expected });
  });

  it('what the fast parser refuses still parses through the document parser (a local tag)', () => {
    expect(valueOf('k: !local bar\n')).toEqual({ k: 'bar' });
  });

  it('a syntax error names the line and column', () => {
    const r = parse('a: 1\nb: [unclosed\n');
    expect(r.src).toBeUndefined();
    expect(r.issues[0]).toMatchObject({ code: 'CONFIG_YAML_SYNTAX', file: 'cfg/x.yaml' });
    expect(r.issues[0]!.line).toBeGreaterThanOrEqual(2);
  });

  it('duplicate keys are refused', () => {
    expect(parse('a: 1\na: 2\n').issues[0]).toMatchObject({ code: 'CONFIG_YAML_SYNTAX', line: 2 });
  });

  it('many aliases of a small value are fine', () => {
    const jobs = Array.from({ length: 500 }, (_, i) => `  - { id: j${i}, deliver: *d }`).join('\n');
    const v = valueOf(`d: &d { channel: log, to: op }\njobs:\n${jobs}\n`) as {
      jobs: { deliver: unknown }[];
    };
    expect(v.jobs).toHaveLength(500);
    expect(v.jobs[499]!.deliver).toEqual({ channel: 'log', to: 'op' });
  });

  it('refuses an alias bomb and a recursive alias', () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (let i = 0; i < 6; i++) {
      const name = String.fromCharCode(98 + i);
      const prev = String.fromCharCode(97 + i);
      bomb.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const r = parse(bomb.join('\n'));
    expect(r.src).toBeUndefined();
    expect(r.issues[0]).toMatchObject({ code: 'CONFIG_YAML_SYNTAX' });
    expect(r.issues[0]!.message).toContain('aliases expand');
    expect(parse('a: &a [1, *a]\n').issues[0]).toMatchObject({ code: 'CONFIG_YAML_SYNTAX' });
  });

  it('values are frozen and reused for the same text', () => {
    const a = parse('k: [1, 2]\n').src!;
    const b = parse('k: [1, 2]\n').src!;
    expect(Object.isFrozen(a.value)).toBe(true);
    expect(b.value).toBe(a.value);
    expect(a.locate(['k'])).toEqual({ line: 1, column: 4 });
  });
});

describe('parsed trees', () => {
  it('are frozen at every level, with each value as written, a `__proto__` key kept as an own key', () => {
    const v = valueOf(
      'jobs:\n  - { kind: rss, to: op, tags: [op, rss] }\n  - { kind: rss, to: op, deep: { kind: rss } }\n' +
        '"__proto__": op\nlong: [' +
        `${'x'.repeat(80)}, ${'x'.repeat(80)}]\n`,
    ) as Record<string, unknown>;
    expect(JSON.parse(JSON.stringify(v))).toEqual({
      jobs: [
        { kind: 'rss', to: 'op', tags: ['op', 'rss'] },
        { kind: 'rss', to: 'op', deep: { kind: 'rss' } },
      ],
      ['__proto__']: 'op',
      long: ['x'.repeat(80), 'x'.repeat(80)],
    });
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toBe('op');
    const nodes: unknown[] = [v];
    for (let n = nodes.pop(); n !== undefined; n = nodes.pop()) {
      if (n === null || typeof n !== 'object') continue;
      expect(Object.isFrozen(n)).toBe(true);
      nodes.push(...Object.values(n));
    }
  });
});

describe('holdsReference', () => {
  it('finds a reference or an escape at any depth, and nothing in plain values', () => {
    expect(holdsReference('Bearer ${TOKEN}')).toBe(true);
    expect(holdsReference('costs $${5}')).toBe(true);
    expect(holdsReference({ a: [1, { b: '${file:/x}' }] })).toBe(true);
    expect(holdsReference({ a: [1, { b: '$ {x} and {y}' }], c: null, d: true })).toBe(false);
    expect(holdsReference(42)).toBe(false);
  });
});
