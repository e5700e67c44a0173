import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { definePollerKind, withBaseConfig } from '@agent/poller-core';
import { scriptedKind } from '../test/helpers.js';
import { createKindRegistry, loadKindPackages } from './registry.js';

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function configDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'kinds-'));
  dirs.push(d);
  return d;
}

/** Installs a package into `<dir>/node_modules/<name>` whose default export is `body`. */
function install(dir: string, name: string, body: string): void {
  const root = join(dir, 'node_modules', name);
  mkdirSync(root, { recursive: true });
  writeFileSync(
    join(root, 'package.json'),
    JSON.stringify({ name, version: '1.2.3', type: 'module', main: 'index.js' }),
  );
  writeFileSync(join(root, 'index.js'), body);
}

const tick = definePollerKind({
  kind: 'tick',
  apiVersion: 1,
  configSchema: withBaseConfig({ additionalProperties: false, properties: {} }),
  placeholders: [],
  tick: async () => ({ items: [] }),
});

describe('loadKindPackages', () => {
  it('says where to install a missing package, in one line, and loads it once it is installed', async () => {
    const dir = configDir();
    const registry = createKindRegistry();
    const first = await loadKindPackages(registry, ['@me/tick-kind'], { fromDir: dir });
    expect(first.failed).toHaveLength(1);
    expect(first.failed[0]!.message).toBe(
      `kind package "@me/tick-kind" is not installed where the daemon looks for it (node_modules of ${dir} or a parent directory); install it there: cd ${dir} && npm install @me/tick-kind`,
    );
    expect(registry.failedPackages()).toHaveLength(1);
    // The package exports a kind built elsewhere: the brand travels with the object (Symbol.for).
    (globalThis as Record<string, unknown>).registryTestTickKind = tick;
    install(dir, '@me/tick-kind', 'export default globalThis.registryTestTickKind;\n');
    const second = await loadKindPackages(registry, ['@me/tick-kind'], { fromDir: dir });
    expect(second).toEqual({ loaded: [{ package: '@me/tick-kind', kinds: ['tick'] }], failed: [] });
    expect(registry.failedPackages()).toEqual([]);
    expect(registry.packages()).toEqual(['@me/tick-kind']);
    // A loaded package is not loaded again.
    expect(await loadKindPackages(registry, ['@me/tick-kind'], { fromDir: dir })).toEqual({
      loaded: [],
      failed: [],
    });
  });

  it('a package that throws while loading fails with the first line of its error', async () => {
    const dir = configDir();
    install(dir, 'broken-kind', 'throw new Error("boom\\nsecond line");\n');
    const r = await loadKindPackages(createKindRegistry(), ['broken-kind'], { fromDir: dir });
    expect(r.failed.map((f) => f.message)).toEqual(['kind package "broken-kind" failed to load: boom']);
  });
});

const base = {
  kind: 'demo',
  apiVersion: 1 as const,
  configSchema: withBaseConfig({}),
  placeholders: ['a'],
  tick: async () => ({ items: [] }),
};

describe('kind registry', () => {
  it('refuses duplicates, non-kinds and foreign API versions with codes', () => {
    const r = createKindRegistry([scriptedKind('one').kind]);
    expect(() => r.register(scriptedKind('one').kind, '@acme/one')).toThrow(
      expect.objectContaining({ code: 'POLLER_DUPLICATE_KIND' }),
    );
    expect(() => r.register({ kind: 'x', tick() {} })).toThrow(
      expect.objectContaining({ code: 'POLLER_NOT_A_KIND' }),
    );
    const forged = Object.freeze({
      ...base,
      kind: 'forged',
      apiVersion: 2,
      [Symbol.for('@agent/poller-kind')]: 2,
    });
    expect(() => r.register(forged)).toThrow(expect.objectContaining({ code: 'POLLER_KIND_API_VERSION' }));
    expect(r.list().map((k) => k.kind)).toEqual(['one']);
  });

  it('recognises a kind branded by another copy of the package (registered symbol)', () => {
    const copy = { ...base, kind: 'copy' };
    Object.defineProperty(copy, Symbol.for('@agent/poller-kind'), { value: 1 });
    Object.freeze(copy);
    expect(() => createKindRegistry([copy])).not.toThrow();
  });
});
