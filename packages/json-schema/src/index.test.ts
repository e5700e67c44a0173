import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { validatorModule } from './generate.js';
import { hasGeneratedValidator, schemaKey, type ValidateFunction } from './index.js';
import { createAjv } from './options.js';
import * as validators from './index.js';

// Schemas that use what the product's schemas use: defaults, patterns, lengths, enums, `oneOf` of keyed
// branches, `uri`, nested maps and arrays.
const SCHEMAS: Record<string, object> = {
  settings: {
    $id: 'settings',
    title: 'Settings',
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: {
      name: { type: 'string', pattern: '^[a-z]+$', maxLength: 8, description: 'A name.' },
      level: { enum: ['info', 'debug'], default: 'info' },
      url: { type: 'string', format: 'uri' },
      limits: {
        type: 'object',
        default: {},
        properties: { max: { type: 'integer', minimum: 1, default: 5 } },
      },
      tags: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
    },
  },
  schedule: {
    type: 'object',
    oneOf: [
      { required: ['every_secs'], properties: { every_secs: { type: 'integer', minimum: 1 } } },
      { required: ['cron'], properties: { cron: { type: 'string' } } },
    ],
  },
};

const VALUES: [string, unknown][] = [
  ['settings', { name: 'abc' }],
  ['settings', { name: 'abc', level: 'debug', limits: { max: 3 }, tags: ['a', 'b'] }],
  ['settings', { name: 'ABC' }],
  ['settings', { name: 'abcdefghij', extra: 1 }],
  ['settings', { level: 'trace', url: 'not a uri', tags: ['a', 'a', ''] }],
  ['settings', { name: 'ok', url: 'https://example.com/x' }],
  ['settings', 'not an object'],
  ['schedule', { every_secs: 60 }],
  ['schedule', { every_secs: 60, cron: '* * * * *' }],
  ['schedule', {}],
  ['schedule', { every_secs: 0 }],
];

const dir = mkdtempSync(join(tmpdir(), 'json-schema-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes the generated module with its import pointed at this package's source, and imports it. */
async function importGenerated(schemas: Record<string, object>, name: string): Promise<string> {
  const text = validatorModule(schemas, ['test']);
  const file = join(dir, `${name}.mjs`);
  const self = pathToFileURL(join(import.meta.dirname, 'index.ts')).href;
  writeFileSync(file, text.replace("from '@agent/json-schema'", `from '${self}'`));
  await import(pathToFileURL(file).href);
  return text;
}

/** What a validator says about a value: the verdict, the value with its defaults, the errors. */
function run(fn: ValidateFunction, value: unknown) {
  const copy = structuredClone(value);
  const ok = fn(copy);
  const errors = (fn.errors ?? []).map((e) => ({
    keyword: e.keyword,
    instancePath: e.instancePath,
    schemaPath: e.schemaPath,
    params: e.params,
    // `verbose`: the error carries its schema, which the config loader reads.
    parentSchemaKeys: Object.keys((e.parentSchema as object | undefined) ?? {}),
  }));
  return { ok, value: copy, errors };
}

describe('generated validators', () => {
  it('answer exactly as ajv compiled at run time, defaults and errors included', async () => {
    // A fresh copy of each schema: compileSchema caches per object, so these cannot hit an earlier cache.
    const before = structuredClone(SCHEMAS);
    for (const schema of Object.values(before)) expect(hasGeneratedValidator(schema)).toBe(false);
    await importGenerated(SCHEMAS, 'same');
    const ajv = createAjv();
    for (const [name, value] of VALUES) {
      const schema = structuredClone(SCHEMAS[name]!);
      expect(hasGeneratedValidator(schema)).toBe(true);
      const { $id: _drop, ...rest } = schema as { $id?: string };
      expect(run(validators.compileSchema(schema), value), `${name} ${JSON.stringify(value)}`).toEqual(
        run(ajv.compile(rest), value),
      );
    }
  });

  it('are used only for the schema they were made from: a changed schema is compiled by ajv', async () => {
    const original = { type: 'object', properties: { n: { type: 'integer', maximum: 3 } } };
    await importGenerated({ original }, 'original');
    const changed = { type: 'object', properties: { n: { type: 'integer', maximum: 10 } } };
    expect(hasGeneratedValidator(structuredClone(original))).toBe(true);
    expect(hasGeneratedValidator(changed)).toBe(false);
    expect(validators.compileSchema(changed)({ n: 5 })).toBe(true);
    expect(validators.compileSchema(structuredClone(original))({ n: 5 })).toBe(false);
  });

  it('are keyed without the $id, as ajv compiles them', () => {
    const a = { $id: 'one', type: 'string' };
    const b = { $id: 'two', type: 'string' };
    expect(schemaKey(a)).toBe(schemaKey(b));
    expect(schemaKey(a)).not.toBe(schemaKey({ type: 'number' }));
  });

  it('are generated deterministically and load no compiler at run time', async () => {
    const text = validatorModule(SCHEMAS, ['first line', 'second line']);
    expect(validatorModule(structuredClone(SCHEMAS), ['first line', 'second line'])).toBe(text);
    expect(text.startsWith('// first line\n// second line\n// @ts-nocheck\n')).toBe(true);
    expect(text).not.toMatch(/\brequire\(/);
    expect(text).toMatch(/validatorRuntime\("ajv\/dist\/runtime\/ucs2length"\)/);
    expect(text).not.toMatch(/^export /m);
  });

  it('refuse a runtime module that is not one of the helpers', () => {
    expect(() => validators.validatorRuntime('ajv')).toThrow(/unknown module: ajv/);
    expect(
      typeof (validators.validatorRuntime('ajv/dist/runtime/ucs2length') as { default: unknown }).default,
    ).toBe('function');
  });
});

describe('compileSchema', () => {
  it('caches per schema object and throws on a schema ajv cannot compile', () => {
    const schema = { type: 'object', properties: { a: { type: 'string', default: 'x' } } };
    expect(validators.compileSchema(schema)).toBe(validators.compileSchema(schema));
    const value: Record<string, unknown> = {};
    expect(validators.compileSchema(schema)(value)).toBe(true);
    expect(value).toEqual({ a: 'x' });
    expect(() => validators.compileSchema({ type: 'no-such-type' })).toThrow();
  });
});
