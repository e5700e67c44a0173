/**
 * What a client process (the `agent` CLI) needs to find a running daemon: `runtime.yaml` and `broker.yaml`
 * only, so that commands start fast and do not depend on agent files being valid.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ConfigIssue } from './issues.js';
import { resolveRefs } from './refs.js';
import { brokerFileSchema, runtimeFileSchema, type BrokerFile, type RuntimeFile } from './schemas.js';
import { issueAt, readYamlFile } from './source.js';
import { validateAt } from './validate.js';

export interface ClientConfig {
  runtime: RuntimeFile;
  broker: BrokerFile;
  /** `runtime.data_dir` resolved against the working directory. */
  dataDir: string;
}

export function loadClientConfig(
  configDir: string,
  opts: { cwd?: string; env?: Readonly<Record<string, string | undefined>> } = {},
): { config: ClientConfig | null; errors: ConfigIssue[] } {
  const cwd = opts.cwd ?? process.cwd();
  const env = opts.env ?? process.env;
  const errors: ConfigIssue[] = [];
  const read = (rel: string, schema: object): unknown => {
    const exists = existsSync(join(configDir, rel));
    const r = exists ? readYamlFile(configDir, rel, 'global') : { src: undefined, issues: [] };
    errors.push(...r.issues);
    if (exists && !r.src) return undefined;
    const where = r.src ?? { display: join(configDir, rel), locate: () => undefined };
    const value = resolveRefs(r.src?.value ?? {}, {
      cwd,
      env,
      onSecret: () => {},
      onIssue: (segments, code, message, hint) =>
        errors.push(issueAt(where, segments, { scope: 'global', code, message, ...(hint ? { hint } : {}) })),
    });
    const doc = value ?? {};
    errors.push(...validateAt(schema, doc, where, [], { scope: 'global' }));
    return doc;
  };
  const runtime = read('runtime.yaml', runtimeFileSchema) as RuntimeFile;
  const broker = read('broker.yaml', brokerFileSchema) as BrokerFile;
  if (errors.length > 0) return { config: null, errors };
  return { config: { runtime, broker, dataDir: resolve(cwd, runtime.data_dir) }, errors };
}
