import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryLogger } from '@agent/log';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createMemoryKeyValueStore } from './kv-store.js';
import { logChannel, type LogChannelConfig, type LogDeliveryRecord } from './log-channel.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'channels-log-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function create(config: LogChannelConfig = {}) {
  const logger = createMemoryLogger();
  const channel = logChannel.create('console', config, {
    logger,
    state: createMemoryKeyValueStore(),
    onInbound: async () => {},
    now: () => new Date('2026-01-02T03:04:05.000Z'),
  });
  return { logger, channel };
}

describe('log channel', () => {
  it('writes each delivery as a "channel delivery" log record', async () => {
    const { logger, channel } = create();
    await channel.start();
    const result = await channel.send({ to: 'ops', text: 'disk almost full' });
    await channel.stop();
    expect(result.ids).toHaveLength(1);
    expect(logger.find('channel delivery').map((r) => r.fields)).toEqual([
      { plugin: 'log', instance: 'console', to: 'ops', text: 'disk almost full' },
    ]);
    expect(logger.lines[0]).toBe(
      'ts=1970-01-01T00:00:00.000Z level=info msg="channel delivery" plugin=log instance=console to=ops text="disk almost full"',
    );
  });

  it('also appends JSON lines to `file` when set', async () => {
    const file = join(dir, 'out', 'deliveries.jsonl');
    const { channel } = create({ file });
    const [a, b] = await Promise.all([
      channel.send({ to: 'ops', text: 'first' }),
      channel.send({ to: '+4912345', text: 'line one\nline two' }),
    ]);
    await channel.stop();
    const lines = (await readFile(file, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as LogDeliveryRecord);
    expect(lines).toEqual([
      {
        ts: '2026-01-02T03:04:05.000Z',
        plugin: 'log',
        instance: 'console',
        id: a.ids[0],
        to: 'ops',
        text: 'first',
      },
      {
        ts: '2026-01-02T03:04:05.000Z',
        plugin: 'log',
        instance: 'console',
        id: b.ids[0],
        to: '+4912345',
        text: 'line one\nline two',
      },
    ]);
  });

  it('fails with CHANNEL_SEND_FAILED when the file cannot be written', async () => {
    const { channel } = create({ file: dir }); // a directory, not a file
    await expect(channel.send({ to: 'ops', text: 'x' })).rejects.toMatchObject({
      code: 'CHANNEL_SEND_FAILED',
      retryable: false,
    });
  });

  it('refuses empty messages and unknown config fields', async () => {
    const { channel } = create();
    await expect(channel.send({ to: 'ops', text: '' })).rejects.toMatchObject({
      code: 'CHANNEL_MESSAGE_INVALID',
    });
    expect(() => create({ file: '' })).toThrow(expect.objectContaining({ code: 'CHANNEL_CONFIG_INVALID' }));
    expect(() => create({ path: 'x' } as LogChannelConfig)).toThrow(
      expect.objectContaining({ code: 'CHANNEL_CONFIG_INVALID' }),
    );
  });
});
