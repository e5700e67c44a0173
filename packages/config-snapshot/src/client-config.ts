/**
 * What a client process (the `agent` CLI) needs to find a running daemon: `runtime.yaml` and `broker.yaml`
 * only. Deliberately light (no schema compiler, no watcher) so that commands start fast; the daemon
 * validates these files in full when it starts.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ConfigIssue } from './issues.js';
import { resolveRefs } from './refs.js';
import { issueAt, readYamlFile, type SourceFile } from './source.js';

export interface ClientConfig {
  /** The parts of `runtime.yaml` a client reads, defaults filled in. */
  runtime: { data_dir: string; admin: { listen: string; token_file?: string } };
  broker: { kind: 'local' | 'nats'; url?: string; socket_path?: string; subject_prefix?: string };
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
  const read = (
    rel: string,
  ): { value: Record<string, unknown>; where: Pick<SourceFile, 'display' | 'locate'> } => {
    const where = { display: join(configDir, rel), locate: () => undefined };
    if (!existsSync(join(configDir, rel))) return { value: {}, where };
    const r = readYamlFile(configDir, rel, 'global');
    errors.push(...r.issues);
    if (!r.src) return { value: {}, where };
    const value = resolveRefs(r.src.value ?? {}, {
      cwd,
      env,
      onSecret: () => {},
      onIssue: (segments, code, message, hint) =>
        errors.push(issueAt(r.src!, segments, { scope: 'global', code, message, ...(hint ? { hint } : {}) })),
    });
    const ok = value !== null && typeof value === 'object' && !Array.isArray(value);
    if (!ok && value !== undefined)
      errors.push(
        issueAt(r.src, [], { scope: 'global', code: 'CONFIG_INVALID_VALUE', message: 'must be a mapping' }),
      );
    return { value: ok ? (value as Record<string, unknown>) : {}, where: r.src };
  };
  const str = (
    src: { value: Record<string, unknown>; where: Pick<SourceFile, 'display' | 'locate'> },
    path: string[],
    fallback?: string,
  ): string | undefined => {
    let cur: unknown = src.value;
    for (const k of path)
      cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[k] : undefined;
    if (cur === undefined || cur === null) return fallback;
    if (typeof cur !== 'string') {
      errors.push(
        issueAt(src.where, path, {
          scope: 'global',
          code: 'CONFIG_INVALID_VALUE',
          message: 'must be a string',
        }),
      );
      return fallback;
    }
    return cur;
  };
  const runtime = read('runtime.yaml');
  const broker = read('broker.yaml');
  const kind = str(broker, ['kind'], 'local');
  if (kind !== 'local' && kind !== 'nats') {
    errors.push(
      issueAt(broker.where, ['kind'], {
        scope: 'global',
        code: 'CONFIG_INVALID_VALUE',
        message: 'must be one of "local", "nats"',
      }),
    );
  }
  const url = str(broker, ['url']);
  const socketPath = str(broker, ['socket_path']);
  const subjectPrefix = str(broker, ['subject_prefix']);
  const dataDir = str(runtime, ['data_dir'], './data')!;
  const tokenFile = str(runtime, ['admin', 'token_file']);
  const config: ClientConfig = {
    runtime: {
      data_dir: dataDir,
      admin: {
        listen: str(runtime, ['admin', 'listen'], '127.0.0.1:9091')!,
        ...(tokenFile ? { token_file: tokenFile } : {}),
      },
    },
    dataDir: resolve(cwd, dataDir),
    broker: {
      kind: kind === 'nats' ? 'nats' : 'local',
      ...(url ? { url } : {}),
      ...(socketPath ? { socket_path: socketPath } : {}),
      ...(subjectPrefix ? { subject_prefix: subjectPrefix } : {}),
    },
  };
  return errors.length > 0 ? { config: null, errors } : { config, errors };
}
