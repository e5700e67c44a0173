import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';
import { renderAdminApiDocs } from './docs.js';
import { ADMIN_ERROR_CODES } from './errors.js';
import { ADMIN_ROUTES } from './routes.js';

const file = join(import.meta.dirname, '..', '..', '..', 'docs', 'admin-api.md');

/** The committed file is the rendering as prettier formats it (the repo's format check covers docs/). */
async function rendered(): Promise<string> {
  const config = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(renderAdminApiDocs(), { ...config, parser: 'markdown' });
}

describe('docs/admin-api.md', () => {
  it('is up to date with the route table (regenerate: UPDATE_DOCS=1 pnpm exec vitest run --project @agent/admin-api docs)', async () => {
    const text = await rendered();
    if (process.env.UPDATE_DOCS === '1') writeFileSync(file, text);
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  it('documents every route and every error code', () => {
    const md = renderAdminApiDocs();
    for (const r of ADMIN_ROUTES)
      expect(md).toContain(`| ${r.method} | \`${r.path.replace(':id', '<id>')}\``);
    for (const code of Object.keys(ADMIN_ERROR_CODES)) expect(md).toContain(`\`${code}\``);
  });
});
