/** The generated configuration reference (`docs/config/`): core files plus every built-in plugin's blocks. */
import { builtinChannels } from '@agent/channels';
import { coreReferenceEntries, renderReference, type ReferenceEntry } from '@agent/config-snapshot';

export function configReferenceEntries(): ReferenceEntry[] {
  const entries = [...coreReferenceEntries];
  for (const ch of builtinChannels) {
    entries.push({
      name: `plugin-${ch.name}.md`,
      title: `plugins/${ch.name}.yaml: one block under \`instances\``,
      intro: `Instances of the \`${ch.name}\` channel plugin, as \`instances: { <instance_name>: {...} }\`. Changing an instance block needs a restart; a rotated \`\${file:}\` secret is applied by \`POST /admin/credentials/reload\` or the next reload.`,
      schema: ch.instanceSchema,
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
    '`${file:<path>}` (a secret file, mode 600, path relative to the daemon working directory) and `${ENV_VAR}`;',
    '`$${` writes a literal `${`.',
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
