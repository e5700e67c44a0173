// Builds docs/errors.md from the error catalogues in the code: every package keeps its codes as data,
// `{ CODE: { meaning, action, ... } }`, and this renders one table per package from the BUILT modules
// (run `tsc -b` first; `pnpm test` does). `node scripts/gen-errors-doc.mjs` writes the file; `--check` exits 1
// when it is out of date.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Where each package keeps its catalogues: its directory, the built module that exports them (not always the
 * package's entry: a kind package exports only its kind), their names.
 */
const CATALOGUES = [
  { dir: 'apps/daemon', module: 'dist/errors.js', names: ['DAEMON_ERROR_CODES'] },
  { dir: 'packages/admin-api', module: 'dist/index.js', names: ['ADMIN_ERROR_CODES', 'METRICS_ERROR_CODES'] },
  {
    dir: 'packages/agent-runtime',
    module: 'dist/index.js',
    names: ['AGENT_RUNTIME_ERROR_CODES', 'AGENT_RUNTIME_RESULT_CODES'],
  },
  { dir: 'packages/broker', module: 'dist/index.js', names: ['BROKER_ERROR_CODES'] },
  { dir: 'packages/channels', module: 'dist/index.js', names: ['CHANNEL_ERROR_CODES'] },
  {
    dir: 'packages/chat-cluster',
    module: 'dist/index.js',
    names: ['CHAT_CLUSTER_ERROR_CODES'],
  },
  { dir: 'packages/cli', module: 'dist/index.js', names: ['CLI_ERROR_CODES'] },
  { dir: 'packages/cluster', module: 'dist/index.js', names: ['CLUSTER_ERROR_CODES', 'CLUSTER_FILE_CODES'] },
  {
    dir: 'packages/config-snapshot',
    module: 'dist/index.js',
    names: ['CONFIG_ISSUE_CODES', 'CONFIG_ERROR_CODES'],
  },
  { dir: 'packages/guarded-http', module: 'dist/index.js', names: ['GUARDED_HTTP_ERROR_CODES'] },
  { dir: 'packages/model-providers', module: 'dist/index.js', names: ['MODEL_ERROR_CODES'] },
  { dir: 'packages/oauth2', module: 'dist/index.js', names: ['OAUTH2_ERROR_CODES'] },
  { dir: 'packages/pg', module: 'dist/index.js', names: ['PG_ERROR_CODES'] },
  { dir: 'packages/poller-core', module: 'dist/index.js', names: ['POLLER_ERROR_CODES'] },
  { dir: 'packages/poller-runtime', module: 'dist/index.js', names: ['POLLERS_FILE_CODES'] },
  { dir: 'packages/poller-kind-rss', module: 'dist/feed.js', names: ['FEED_ERROR_CODES'] },
  { dir: 'packages/poller-kind-webhook', module: 'dist/items.js', names: ['WEBHOOK_ERROR_CODES'] },
];

const CODE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/;

/**
 * The catalogues, loaded from each package's build: `[{ pkg, names, entries: [[code, info]] }]` sorted by
 * package name. Throws on a malformed entry or a code defined twice, so the doc cannot paper over either.
 */
async function loadCatalogues() {
  const out = [];
  const owner = new Map();
  for (const { dir, module, names } of CATALOGUES) {
    const file = join(root, dir, module);
    if (!existsSync(file)) throw new Error(`${dir}/${module} is missing: run pnpm run build first`);
    const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')).name;
    const mod = await import(pathToFileURL(file).href);
    const entries = [];
    for (const name of names) {
      const catalogue = mod[name];
      if (catalogue === null || typeof catalogue !== 'object' || Array.isArray(catalogue))
        throw new Error(`${pkg} exports no catalogue object ${name}`);
      for (const [code, info] of Object.entries(catalogue)) {
        const where = `${pkg} ${name}.${code}`;
        if (!CODE.test(code)) throw new Error(`${where}: not an UPPER_SNAKE code`);
        for (const field of ['meaning', 'action'])
          if (typeof info?.[field] !== 'string' || info[field].trim() === '')
            throw new Error(`${where}: needs a non-empty ${field}`);
        if (owner.has(code)) throw new Error(`${where}: also defined by ${owner.get(code)}`);
        owner.set(code, where);
        entries.push([code, info]);
      }
    }
    out.push({ pkg, names, entries });
  }
  return out.sort((a, b) => a.pkg.localeCompare(b.pkg));
}

const cell = (text) => text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');

/** What an entry says besides meaning and action, in front of its meaning. */
function facts(info) {
  const out = [];
  if (typeof info.status === 'number')
    out.push(info.status === 0 ? 'Thrown at start.' : `HTTP ${info.status}.`);
  if (info.errorClass === 'permanent') out.push('Permanent.');
  if (info.errorClass === 'transient') out.push('Transient.');
  if (info.refused === true) out.push('A refused request: no retry can help.');
  return out.length ? `${out.join(' ')} ` : '';
}

function renderErrorsDoc(catalogues) {
  const out = [
    '# Error codes',
    '',
    '<!-- Generated from the error catalogues in the code by `pnpm docs:errors`; do not edit by hand. -->',
    '',
    'Every error the project raises or reports carries a stable `code`. Each package keeps its codes as data,',
    '`{ CODE: { meaning, action } }`, next to the code that throws them; this page is generated from those',
    'catalogues, one table per package.',
    '',
  ];
  for (const { pkg, names, entries } of catalogues) {
    out.push(`## ${pkg}`, '', `From ${names.map((n) => `\`${n}\``).join(', ')}.`, '');
    out.push('| code | meaning | what to do |', '| --- | --- | --- |');
    for (const [code, info] of entries)
      out.push(`| \`${code}\` | ${cell(facts(info) + info.meaning)} | ${cell(info.action)} |`);
    out.push('');
  }
  return out.join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const text = renderErrorsDoc(await loadCatalogues());
  const target = join(root, 'docs', 'errors.md');
  if (process.argv.includes('--check')) {
    const same = existsSync(target) && readFileSync(target, 'utf8') === text;
    if (!same) console.error('docs/errors.md is out of date: run pnpm docs:errors');
    process.exit(same ? 0 : 1);
  }
  writeFileSync(target, text);
  console.log('wrote docs/errors.md');
}
