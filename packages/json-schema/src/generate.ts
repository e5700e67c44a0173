/**
 * Ahead-of-time validators: the source of a TypeScript module that, when imported, registers one validator
 * per schema (ajv's standalone code, made with the product's options). A process that imports it validates
 * those schemas without loading or running ajv's compiler, which dominates the start of a small daemon.
 */
import { createRequire } from 'node:module';
import { createAjv, schemaKey, withoutId } from './options.js';

const require = createRequire(import.meta.url);

type StandaloneCode = (ajv: ReturnType<typeof createAjv>, refs: Record<string, string>) => string;

/**
 * The module that registers validators for `schemas` (by export name, for the generated code's names).
 * `header` is its first comment lines (who generates it and how to regenerate it). Deterministic: the
 * same schemas give the same text.
 */
export function validatorModule(
  schemas: Readonly<Record<string, object>>,
  header: readonly string[],
): string {
  const standaloneCode = (require('ajv/dist/standalone') as { default: StandaloneCode }).default;
  const ajv = createAjv({ source: true, esm: true, lines: true });
  const names = Object.keys(schemas).sort();
  for (const name of names) ajv.addSchema(withoutId(schemas[name]!), name);
  let code = standaloneCode(ajv, Object.fromEntries(names.map((n) => [n, n])));
  for (const name of names) {
    // Exported names are only for registration below; nothing imports them.
    const exported = `export const ${name} = `;
    if (!code.includes(exported)) throw new Error(`generated code has no export for ${name}`);
    code = code.replace(exported, `const ${name} = `);
  }
  code = code.replace(/require\(("[^"]+")\)/g, (_m, id: string) => `validatorRuntime(${id})`);
  const registrations = names.map((n) => `  '${schemaKey(schemas[n]!)}': ${n},`);
  return [
    ...header.map((l) => `// ${l}`),
    '// @ts-nocheck',
    "import { registerValidators, validatorRuntime } from '@agent/json-schema';",
    code.replace(/^"use strict";\n?/, ''),
    'registerValidators({',
    ...registrations,
    '});',
    '',
  ].join('\n');
}
