// The YAML examples of docs/pollers-accounts.md are valid config: each block names its file on its first
// line, and each account under `accounts` passes the schema the daemon validates that plugin file with.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentFileSchema, compileSchema } from '@agent/config-snapshot';
import { calendarAccountSchema } from '@agent/poller-kind-calendar/schema';
import { mailAccountSchema } from '@agent/poller-kind-mail/schema';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const doc = readFileSync(join(import.meta.dirname, '..', '..', '..', 'docs', 'pollers-accounts.md'), 'utf8');

/** The bodies of the fenced `yaml` blocks, in order. */
const yamlBlocks = [...doc.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
  .filter((m) => m[1] === 'yaml')
  .map((m) => m[2]!);

const ACCOUNT_SCHEMAS: Record<string, object> = {
  'config/plugins/mail.yaml': mailAccountSchema,
  'config/plugins/calendar.yaml': calendarAccountSchema,
};

/** The files a block says it belongs to (`# config/plugins/mail.yaml, config/plugins/calendar.yaml`). */
const filesOf = (block: string): string[] =>
  (/^# (config\/\S+(?:, config\/\S+)*)\n/.exec(block)?.[1] ?? '').split(', ').filter(Boolean);

/** The schema errors of `value` (a copy: validation fills in defaults). */
function problems(schema: object, value: unknown): string[] {
  const validate = compileSchema(schema);
  if (validate(structuredClone(value))) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`);
}

describe('docs/pollers-accounts.md examples', () => {
  it('has the account examples of every provider, each block naming its file', () => {
    expect(yamlBlocks.length).toBeGreaterThanOrEqual(4);
    for (const block of yamlBlocks) expect(filesOf(block), block).not.toEqual([]);
    const providers = yamlBlocks.flatMap((b) =>
      Object.values((parse(b) as { accounts?: Record<string, { provider?: string }> }).accounts ?? {}).map(
        (a) => a.provider ?? 'google',
      ),
    );
    expect(new Set(providers)).toEqual(new Set(['google', 'imap', 'caldav']));
  });

  it('every account example is valid for each file it names', () => {
    let checked = 0;
    for (const block of yamlBlocks) {
      const value = parse(block) as { accounts?: Record<string, unknown> };
      for (const file of filesOf(block)) {
        const schema = ACCOUNT_SCHEMAS[file];
        if (!schema) continue;
        expect(Object.keys(value.accounts ?? {}), block).not.toEqual([]);
        for (const [name, account] of Object.entries(value.accounts ?? {})) {
          expect(problems(schema, account), `${file} accounts.${name}`).toEqual([]);
          checked++;
        }
      }
    }
    // Google (in both files), IMAP, CalDAV.
    expect(checked).toBeGreaterThanOrEqual(4);
  });

  it('an agent file example is valid for the agent file schema', () => {
    const agentBlocks = yamlBlocks.filter((b) => filesOf(b).some((f) => f.startsWith('config/agents.d/')));
    expect(agentBlocks).not.toEqual([]);
    // The example shows the `credentials` part; the rest of an agent file is required elsewhere.
    const { credentials } = agentFileSchema.properties;
    for (const block of agentBlocks)
      expect(problems(credentials, (parse(block) as { credentials?: unknown }).credentials), block).toEqual(
        [],
      );
  });

  it('a wrong example would be caught: the schemas refuse what the docs must not show', () => {
    expect(
      problems(mailAccountSchema, { provider: 'imap', host: 'imap.example.com', user: 'a' }),
    ).not.toEqual([]);
    expect(
      problems(calendarAccountSchema, { provider: 'caldav', url: 'ftp://x/', user: 'a', password: 'b' }),
    ).not.toEqual([]);
  });
});
