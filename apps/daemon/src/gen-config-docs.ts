#!/usr/bin/env node
// Writes the configuration reference: `node apps/daemon/dist/gen-config-docs.js docs/config`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderConfigReference } from './config-reference.js';

const out = process.argv[2] ?? 'docs/config';
mkdirSync(out, { recursive: true });
for (const [name, text] of renderConfigReference()) writeFileSync(join(out, name), text);
console.log(`wrote ${out}`);
