import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { KeyValueStore } from './contract.js';
import { ChannelError } from './errors.js';

/** An in-memory store, for tests and for plugins whose state may be lost on restart. */
export function createMemoryKeyValueStore(initial: Record<string, string> = {}): KeyValueStore {
  const data = new Map(Object.entries(initial));
  return {
    get: async (key) => data.get(key),
    set: async (key, value) => {
      data.set(key, value);
    },
  };
}

function describeError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code ?? (err instanceof Error ? err.message : String(err));
}

async function readStoreFile(path: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return {}; // nothing stored yet
    throw new ChannelError(
      'CHANNEL_STATE_CORRUPT',
      `cannot read channel state file ${path} (${describeError(err)}); check its permissions`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const valid =
    typeof parsed === 'object' &&
    parsed !== null &&
    !Array.isArray(parsed) &&
    Object.values(parsed).every((v) => typeof v === 'string');
  if (!valid) {
    throw new ChannelError(
      'CHANNEL_STATE_CORRUPT',
      `channel state file ${path} is not a JSON object of strings; repair it or delete it (a deleted ` +
        `chat_b offset lets the vendor re-deliver updates it still holds)`,
    );
  }
  return { ...(parsed as Record<string, string>) };
}

async function fsyncDirectory(dir: string): Promise<void> {
  // Makes the rename itself durable. Not every platform can open a directory: best effort.
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    /* ignored on purpose */
  }
}

/**
 * A store kept in one JSON file. Every `set` rewrites the file atomically: a temp file beside it is
 * written, fsynced and renamed over the old one, so a crash leaves either the old or the new
 * content, never a torn file. Writes are serialised; the file is created with mode 600.
 */
export function createFileKeyValueStore(path: string): KeyValueStore {
  let loaded: Promise<Record<string, string>> | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let tempCounter = 0;

  const load = (): Promise<Record<string, string>> => {
    loaded ??= readStoreFile(path).catch((err: unknown) => {
      loaded = undefined; // let a later call retry once the file is repaired
      throw err;
    });
    return loaded;
  };

  const writeAtomically = async (content: string): Promise<void> => {
    const dir = dirname(path);
    const temp = `${path}.${process.pid}.${++tempCounter}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await mkdir(dir, { recursive: true });
      const handle = await open(temp, 'wx', 0o600);
      try {
        await handle.writeFile(content, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true }).catch(() => {});
      throw new ChannelError(
        'CHANNEL_STATE_WRITE_FAILED',
        `cannot write channel state file ${path} (${describeError(err)}); check that its directory is writable`,
      );
    }
    await fsyncDirectory(dir);
  };

  return {
    async get(key) {
      await queue.catch(() => {});
      const data = await load();
      return Object.hasOwn(data, key) ? data[key] : undefined;
    },
    set(key, value) {
      const run = async (): Promise<void> => {
        const data = await load();
        const next = { ...data, [key]: value };
        await writeAtomically(JSON.stringify(next, null, 2) + '\n');
        // Only a durable write changes what `get` answers.
        loaded = Promise.resolve(next);
      };
      const result = queue.then(run, run);
      queue = result.catch(() => {});
      return result;
    },
  };
}
