/** The product's ajv options, the ajv that carries them, and the key a schema's validator is found by. */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Ajv, Options } from 'ajv';

const require = createRequire(import.meta.url);

/** The options of every validator, generated or compiled. */
const VALIDATOR_OPTIONS: Readonly<Options> = Object.freeze({
  allErrors: true,
  useDefaults: true,
  strict: false,
  allowUnionTypes: true,
  verbose: true,
});

/** The formats a schema may name; others are ignored, as ajv ignores unknown formats without `strict`. */
const VALIDATOR_FORMATS: readonly string[] = ['uri'];

/** A new ajv with the product's options and formats (loaded here, on first use); `code` is for the generator. */
export function createAjv(code?: Options['code']): Ajv {
  const { Ajv: AjvClass } = require('ajv') as typeof import('ajv');
  const formats = require('ajv-formats') as { default: (ajv: Ajv, names: string[]) => Ajv };
  const ajv = new AjvClass({ ...VALIDATOR_OPTIONS, ...(code ? { code } : {}) });
  formats.default(ajv, [...VALIDATOR_FORMATS]);
  return ajv;
}

/** The schema as ajv compiles it: without its `$id`, which names a schema for people (and ajv refuses twice). */
export function withoutId(schema: object): object {
  const { $id: _drop, ...rest } = schema as { $id?: unknown };
  return rest;
}

/** What a schema's validator is registered under: a digest of the schema without its `$id`. */
export function schemaKey(schema: object): string {
  return createHash('sha256')
    .update(JSON.stringify(withoutId(schema)))
    .digest('hex')
    .slice(0, 32);
}
