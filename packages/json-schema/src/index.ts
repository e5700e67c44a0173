/**
 * JSON Schema validation with the product's one set of options (every error, defaults filled in, the `uri`
 * format, errors that carry their schema). The schemas that ship with the product are validated by code
 * generated ahead of time (`./generate`), registered by the package that owns them; any other schema (a
 * kind package's, a tool's, one changed since its code was generated) is compiled by ajv, loaded on first
 * use. Both give the same function shape, so callers never know which one they hold.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Ajv, Options, ValidateFunction } from 'ajv';

export type { ErrorObject, ValidateFunction } from 'ajv';

const require = createRequire(import.meta.url);

/** The options of every validator, generated or compiled. */
export const VALIDATOR_OPTIONS: Readonly<Options> = Object.freeze({
  allErrors: true,
  useDefaults: true,
  strict: false,
  allowUnionTypes: true,
  verbose: true,
});

/** The formats a schema may name; others are ignored, as ajv ignores unknown formats without `strict`. */
export const VALIDATOR_FORMATS: readonly string[] = ['uri'];

/** A new ajv with the product's options and formats; `code` is for the generator. */
export function createAjv(code?: Options['code']): Ajv {
  const { Ajv: AjvClass } = require('ajv') as typeof import('ajv');
  const formats = require('ajv-formats') as { default: (ajv: Ajv, names: string[]) => Ajv };
  const ajv = new AjvClass({ ...VALIDATOR_OPTIONS, ...(code ? { code } : {}) });
  formats.default(ajv, [...VALIDATOR_FORMATS]);
  return ajv;
}

/** What a schema's validator is registered under: a digest of the schema without its `$id`. */
export function schemaKey(schema: object): string {
  return createHash('sha256')
    .update(JSON.stringify(withoutId(schema)))
    .digest('hex')
    .slice(0, 32);
}

function withoutId(schema: object): object {
  // The `$id` names a schema for people; ajv would also refuse a second schema with the same one.
  const { $id: _drop, ...rest } = schema as { $id?: unknown };
  return rest;
}

const generated = new Map<string, ValidateFunction>();
const compiled = new WeakMap<object, ValidateFunction>();
let ajv: Ajv | undefined;

/** Registers generated validators by schema key; a generated module calls it when it is imported. */
export function registerValidators(validators: Readonly<Record<string, ValidateFunction>>): void {
  for (const [key, fn] of Object.entries(validators)) generated.set(key, fn);
}

/**
 * The validator of `schema` (cached per schema object): its generated code when registered under the
 * schema's key, else ajv's compilation (ajv throws on a schema it cannot compile). The function fills
 * defaults into what it checks and leaves its errors in `.errors`.
 */
export function compileSchema(schema: object): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    fn = generated.get(schemaKey(schema)) ?? (ajv ??= createAjv()).compile(withoutId(schema));
    compiled.set(schema, fn);
  }
  return fn;
}

/** Whether `schema` is validated by generated code (the generated module must have been imported). */
export function hasGeneratedValidator(schema: object): boolean {
  return generated.has(schemaKey(schema));
}

// What generated code may load at run time: ajv's small runtime helpers, never ajv itself.
const RUNTIME_MODULES = new Set([
  'ajv/dist/runtime/ucs2length',
  'ajv/dist/runtime/equal',
  'ajv/dist/runtime/uri',
  'ajv-formats/dist/formats',
]);

/** The `require` of generated code, resolved from this package (which depends on ajv). */
export function validatorRuntime(id: string): unknown {
  if (!RUNTIME_MODULES.has(id)) throw new Error(`generated validator asks for an unknown module: ${id}`);
  return require(id);
}
