import { join } from 'node:path';
import { createMemoryLogger } from '@agent/log';
import { describe, expect, it } from 'vitest';
import { NATS_URL, rejectionOf, syncErrorOf, uniqueSubject } from '../test/helpers.js';
import { connectBroker, createBroker, redactUrl, resolveBrokerConfig } from './index.js';

describe('broker.yaml', () => {
  it('defaults to local with the socket in the data dir; an empty file is fine', () => {
    expect(resolveBrokerConfig(undefined, { dataDir: '/srv/agent' })).toEqual({
      kind: 'local',
      socketPath: join('/srv/agent', 'broker.sock'),
    });
    expect(resolveBrokerConfig({ kind: 'local' }, { dataDir: '/srv/agent' }).socketPath).toBe(
      '/srv/agent/broker.sock',
    );
  });

  it('resolves socket_path: absolute as is, relative against the working directory', () => {
    expect(resolveBrokerConfig({ socket_path: '/run/a.sock' }, { dataDir: '/d' }).socketPath).toBe(
      '/run/a.sock',
    );
    expect(
      resolveBrokerConfig({ socket_path: 'run/a.sock' }, { dataDir: '/d', cwd: '/home/op' }).socketPath,
    ).toBe('/home/op/run/a.sock');
  });

  it('takes nats with its url', () => {
    expect(resolveBrokerConfig({ kind: 'nats', url: 'nats://127.0.0.1:4222' }, { dataDir: '/d' })).toEqual({
      kind: 'nats',
      url: 'nats://127.0.0.1:4222',
    });
  });

  it.each([
    [{ kind: 'redis' }, 'kind must be'],
    [{ kind: 'nats' }, 'needs url'],
    [{ kind: 'nats', url: '' }, 'url must be'],
    [{ socket_path: 3 }, 'socket_path must be'],
    [{ kind: 'local', port: 4222 }, 'unknown field "port"'],
    [['local'], 'must be a mapping'],
    ['local', 'must be a mapping'],
  ])('refuses %j', (raw, message) => {
    const err = syncErrorOf(() => resolveBrokerConfig(raw, { dataDir: '/d' }));
    expect(err.code).toBe('BROKER_CONFIG_INVALID');
    expect(err.message).toContain(message);
  });
});

describe('factories', () => {
  it('a local client needs a socket path; nats needs a url', async () => {
    expect((await rejectionOf(connectBroker({ kind: 'local' }))).code).toBe('BROKER_CONFIG_INVALID');
    expect((await rejectionOf(connectBroker({ kind: 'nats' }))).code).toBe('BROKER_CONFIG_INVALID');
    expect((await rejectionOf(createBroker({ kind: 'nats' }))).code).toBe('BROKER_CONFIG_INVALID');
  });

  it('createBroker without a socket path is a private in-process bus', async () => {
    const b = await createBroker({ kind: 'local' });
    b.subscribe('svc.inproc', async (msg) => b.publish(msg.reply as string, 'in-process'));
    await expect(b.request('svc.inproc', null)).resolves.toBe('in-process');
    await b.close();
  });

  it('nats from the same config shape: the daemon serves, a client reaches it', async () => {
    const config = resolveBrokerConfig({ kind: 'nats', url: NATS_URL }, { dataDir: '/unused' });
    const log = createMemoryLogger();
    const daemon = await createBroker(config, { logger: log });
    const client = await connectBroker(config);
    try {
      expect(daemon.kind).toBe('nats');
      const subject = uniqueSubject('svc.factory');
      daemon.subscribe(subject, async (msg) => daemon.publish(msg.reply as string, { ok: msg.data }));
      await daemon.flush();
      await expect(client.request(subject, 1, { timeoutMs: 3000 })).resolves.toEqual({ ok: 1 });
      expect(log.find('broker connected to NATS')).toHaveLength(1);
    } finally {
      await client.close();
      await daemon.close();
    }
  });

  it('an unreachable NATS server fails fast with BROKER_UNREACHABLE and no credentials in the message', async () => {
    const started = Date.now();
    const err = await rejectionOf(connectBroker({ kind: 'nats', url: 'nats://user:hunter2@127.0.0.1:1' }));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(err.code).toBe('BROKER_UNREACHABLE');
    expect(err.message).not.toContain('hunter2');
    expect(err.message).toContain('127.0.0.1:1');
  });

  it('redacts user info from URLs', () => {
    expect(redactUrl('nats://u:p@h:4222,nats://h2:4222')).toBe('nats://[redacted]@h:4222,nats://h2:4222');
  });
});
