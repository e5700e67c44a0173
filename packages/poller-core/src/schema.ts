/**
 * The JSON Schema validator of kind configs (defaults filled in, `uri` format), shared with the config
 * loader: a config means the same to the author's tests and to the daemon. A built-in kind's schema has a
 * generated validator; a kind package's is compiled by ajv on first use.
 */
export { compileSchema } from '@agent/json-schema';
