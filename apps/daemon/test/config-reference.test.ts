import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderConfigReference } from '../src/config-reference.js';

const docs = join(import.meta.dirname, '..', '..', '..', 'docs', 'config');

describe('config reference', () => {
  it('docs/config matches the schemas (run `pnpm docs:config` after changing a schema)', () => {
    const rendered = renderConfigReference();
    expect(readdirSync(docs).sort()).toEqual([...rendered.keys()].sort());
    for (const [name, text] of rendered) expect(readFileSync(join(docs, name), 'utf8'), name).toBe(text);
  });

  it('documents defaults and restart-required fields', () => {
    const rendered = renderConfigReference();
    expect(rendered.get('runtime.md')).toContain('| `metrics.listen` | string |  | `"127.0.0.1:9090"` |');
    expect(rendered.get('agent.md')).toMatch(/`workspace`.*Restart required/);
  });
});
