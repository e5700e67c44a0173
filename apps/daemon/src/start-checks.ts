/**
 * What the daemon refuses at start beyond the files themselves, shared by the start and by `--check-config`
 * (so that the check says what the start will say).
 */
import { readFileSync, statSync } from 'node:fs';
import type { LoadResult } from '@agent/config-snapshot';

/** The refusal of a start without any valid agent, or `null` when at least one agent is valid. */
export function noValidAgentMessage(boot: LoadResult, configDir: string): string | null {
  if (!boot.snapshot || boot.snapshot.agents.size > 0) return null;
  return boot.rejected.length > 0
    ? `no agent in ${configDir} is valid (${boot.rejected.length} rejected); fix one and start again`
    : `no agent is defined in ${configDir}; add agents.d/<agent_id>.yaml`;
}

/**
 * The refusal of a start while a section's file (e.g. `pollers.yaml`) exists but cannot be used at all (too
 * large, a YAML error, invalid settings): the daemon would otherwise run without any of the jobs it names,
 * after one log line. A reload keeps the running section instead; at start nothing runs yet.
 */
export function unusableSectionMessage(boot: LoadResult, configDir: string): string | null {
  const files = [...new Set(boot.errors.filter((e) => e.scope === 'section').map((e) => e.file))];
  if (files.length === 0) return null;
  return `${files.join(', ')} cannot be used (see the error(s) above), so none of what it defines would run; fix it (agent --check-config --config-dir ${configDir}) and start again`;
}

/** The admin bearer token from `admin.token_file`: mode 600 like every secret, not empty. */
export function readAdminToken(path: string): { token: string } | { error: string } {
  let mode: number;
  let text: string;
  try {
    mode = statSync(path).mode & 0o777;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    return {
      error: `admin.token_file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  }
  if ((mode & 0o077) !== 0)
    return {
      error: `admin.token_file ${path} has mode ${mode.toString(8).padStart(4, '0')}; run chmod 600 ${path}`,
    };
  const token = text.replace(/\r?\n$/, '');
  if (!token.trim()) return { error: `admin.token_file ${path} is empty` };
  return { token };
}
