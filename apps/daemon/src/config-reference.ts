/** The generated configuration reference (`docs/config/`): core files plus every built-in plugin's blocks. */
import { builtinChannels } from '@agent/channels';
import { coreReferenceEntries, renderReference, type ReferenceEntry } from '@agent/config-snapshot';
import { jobSchema, pollersFileSchema } from '@agent/poller-runtime';
import { builtinKinds } from './builtin-kinds.js';
import { accountSchemas } from './plugin-accounts.js';

function configReferenceEntries(): ReferenceEntry[] {
  const entries = [...coreReferenceEntries];
  // pollers.yaml is the poller runtime's: its settings and one job's envelope.
  entries.push(
    { name: 'pollers.md', title: 'pollers.yaml', schema: pollersFileSchema },
    {
      name: 'poller-job.md',
      title: 'pollers.yaml: one job (`pollers.jobs[]`)',
      intro:
        'Each job is validated on its own; an invalid job never stops its siblings. `config` is validated by the kind.',
      schema: jobSchema,
    },
  );
  for (const ch of builtinChannels) {
    entries.push({
      name: `plugin-${ch.name}.md`,
      title: `plugins/${ch.name}.yaml: one block under \`instances\``,
      intro: `Instances of the \`${ch.name}\` channel plugin, as \`instances: { <instance_name>: {...} }\`. Changing an instance block needs a restart; a rotated \`\${file:}\` secret is applied by \`POST /admin/credentials/reload\` or the next reload.`,
      schema: ch.instanceSchema,
    });
  }
  for (const k of builtinKinds as readonly { kind: string; configSchema: object }[]) {
    entries.push({
      name: `kind-${k.kind}.md`,
      title: `pollers.yaml: \`config\` of a \`kind: ${k.kind}\` job`,
      intro: `Options of the \`${k.kind}\` kind, under \`config:\` of a job in \`pollers.jobs\`. Validated per job at boot and at every reload; an invalid config rejects that job only.`,
      schema: k.configSchema,
    });
  }
  for (const [name, schema] of Object.entries(accountSchemas)) {
    // A provider switch (`if`/`then`/`else`) is documented as its branches, one table each.
    const { then: imap, else: other } = schema as { then?: object; else?: object };
    entries.push({
      name: `plugin-${name}-account.md`,
      title: `plugins/${name}.yaml: one block under \`accounts\``,
      intro: `Provider accounts for the \`${name}\` poller kind, as \`accounts: { <account_name>: {...} }\`; an agent names one in \`credentials.${name}\`. Secrets normally come from \`\${file:}\`. Hot: changes apply at the next reload or \`POST /admin/credentials/reload\`.`,
      schema: imap && other ? { ...schema, oneOf: [other, imap] } : schema,
    });
  }
  return entries;
}

/** File name -> Markdown, including an index. */
export function renderConfigReference(): Map<string, string> {
  const entries = configReferenceEntries();
  const files = new Map<string, string>();
  const index = [
    '# Configuration reference',
    '',
    '<!-- Generated from the JSON Schemas; do not edit by hand. Regenerate with `pnpm docs:config`. -->',
    '',
    'Every file below lives in the config directory (`--config-dir`, default `./config`). String values may use',
    "`${file:<path>}` (a secret file, mode 600, owned by the daemon's user, path relative to the daemon working",
    'directory) and `${ENV_VAR}`; `$${` writes a literal `${`. Secret values never appear in logs, errors,',
    'metrics, admin answers or CLI output ([secrets](../secrets.md)).',
    '',
  ];
  for (const e of entries) {
    files.set(e.name, renderReference(e));
    index.push(`- [${e.title}](${e.name})`);
  }
  index.push('');
  files.set('README.md', index.join('\n'));
  return files;
}
