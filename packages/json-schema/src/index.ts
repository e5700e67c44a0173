/**
 * JSON Schema validation with the product's one set of options (every error, defaults filled in, the `uri`
 * format, errors that carry their schema). The schemas that ship with the product are validated by code
 * generated ahead of time (`./generate`), registered by the package that owns them; any other schema (a
 * kind package's, a tool's, one changed since its code was generated) is compiled by ajv, loaded on first
 * use. Both give the same function shape, so callers never know which one they hold.
 */
import { createRequire } from 'node:module';
import type { Ajv, ValidateFunction } from 'ajv';
import { createAjv, schemaKey, withoutId } from './options.js';

export type { ErrorObject, ValidateFunction } from 'ajv';
export { schemaKey } from './options.js';

const require = createRequire(import.meta.url);

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
