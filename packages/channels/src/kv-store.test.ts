import { mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFileKeyValueStore, createMemoryKeyValueStore } from './kv-store.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'channels-kv-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('createFileKeyValueStore', () => {
  it('answers undefined for missing keys and keeps values across store instances', async () => {
    const path = join(dir, 'nested', 'state.json');
    const store = createFileKeyValueStore(path);
    expect(await store.get('offset:a')).toBeUndefined();
    await store.set('offset:a', '101');
    await store.set('offset:b', '7');
    await store.set('offset:a', '102');
    expect(await store.get('offset:a')).toBe('102');
    const reopened = createFileKeyValueStore(path);
    expect(await reopened.get('offset:a')).toBe('102');
    expect(await reopened.get('offset:b')).toBe('7');
    expect(await reopened.get('constructor')).toBeUndefined();
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('replaces the file by rename, leaves no temp files and never exposes a torn file', async () => {
    const path = join(dir, 'state.json');
    const store = createFileKeyValueStore(path);
    await store.set('k0', 'v0');
    // A handle on the file as it was: a rename leaves it reading the old content, an in-place write would not.
    // (Inode numbers can be reused once the old file is gone, so they prove nothing.)
    const before = await open(path, 'r');

    const reader$ = { reading: true };
    let reads = 0;
    const reader = (async () => {
      while (reader$.reading) {
        const text = await readFile(path, 'utf8');
        expect(() => JSON.parse(text) as unknown).not.toThrow();
        reads++;
      }
    })();
    const big = 'x'.repeat(64 * 1024);
    await Promise.all(Array.from({ length: 40 }, (_, i) => store.set(`k${i}`, `${i}-${big}`)));
    reader$.reading = false;
    await reader;

    expect(reads).toBeGreaterThan(0);
    expect(JSON.parse(await before.readFile('utf8'))).toEqual({ k0: 'v0' });
    await before.close();
    expect(await readdir(dir)).toEqual(['state.json']);
    const reopened = createFileKeyValueStore(path);
    for (let i = 0; i < 40; i++) expect(await reopened.get(`k${i}`)).toBe(`${i}-${big}`);
  });

  it('ignores a temp file left behind by a crashed write', async () => {
    const path = join(dir, 'state.json');
    await createFileKeyValueStore(path).set('offset:a', '5');
    await writeFile(`${path}.999.1.deadbeef.tmp`, '{"offset:a": "9');
    expect(await createFileKeyValueStore(path).get('offset:a')).toBe('5');
  });

  it('reports a corrupt file with CHANNEL_STATE_CORRUPT and recovers once it is repaired', async () => {
    const path = join(dir, 'state.json');
    await writeFile(path, '{"offset:a": 5}');
    const store = createFileKeyValueStore(path);
    await expect(store.get('offset:a')).rejects.toMatchObject({ code: 'CHANNEL_STATE_CORRUPT' });
    await writeFile(path, 'not json');
    await expect(store.get('offset:a')).rejects.toMatchObject({ code: 'CHANNEL_STATE_CORRUPT' });
    await writeFile(path, '{"offset:a": "5"}');
    expect(await store.get('offset:a')).toBe('5');
  });

  it('reports a failed write with CHANNEL_STATE_WRITE_FAILED and keeps the old value', async () => {
    const blocker = join(dir, 'not-a-dir');
    await writeFile(blocker, '');
    const store = createFileKeyValueStore(join(blocker, 'state.json'));
    await expect(store.set('k', 'v')).rejects.toMatchObject({ code: 'CHANNEL_STATE_WRITE_FAILED' });
    expect(await store.get('k')).toBeUndefined();
  });
});

describe('createMemoryKeyValueStore', () => {
  it('starts from the initial values and keeps sets', async () => {
    const store = createMemoryKeyValueStore({ a: '1' });
    expect(await store.get('a')).toBe('1');
    await store.set('b', '2');
    expect(await store.get('b')).toBe('2');
    expect(await store.get('c')).toBeUndefined();
  });
});
