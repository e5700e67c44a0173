/**
 * The JSON Schema validator of kind configs: one ajv instance (defaults filled in, `uri` format), made on
 * first use. The runtime validates jobs with it too, so a config means the same to the author's tests and to
 * the daemon.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
  formats?: string[],
) => Ajv;

let ajv: Ajv | undefined;
const compiled = new WeakMap<object, ValidateFunction>();

function instance(): Ajv {
  if (!ajv) {
    ajv = new Ajv({
      allErrors: true,
      useDefaults: true,
      strict: false,
      allowUnionTypes: true,
      verbose: true,
    });
    addFormats(ajv, ['uri']);
  }
  return ajv;
}

/** Compiles `schema` once (cached per schema object); the function fills defaults into what it checks. */
export function compileSchema(schema: object): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    const { $id: _drop, ...rest } = schema as { $id?: string };
    fn = instance().compile(rest);
    compiled.set(schema, fn);
  }
  return fn;
}

export type { ValidateFunction };
