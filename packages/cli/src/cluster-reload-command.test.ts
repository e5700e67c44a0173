import { randomUUID } from 'node:crypto';
import { createLocalBroker, createNatsBroker, type Broker } from '@agent/broker';
import { afterEach, describe, expect, it } from 'vitest';
import { tryClusterReload } from './cluster-reload-command.js';
import type { CliIO } from './io.js';

const NATS_URL = process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
const open: Broker[] = [];
afterEach(async () => {
  for (const b of open.splice(0)) await b.close();
});

function capture(): { io: CliIO; out: string[] } {
  const out: string[] = [];
  const io: CliIO = {
    out: (l) => out.push(l),
    err: () => {},
    cwd: '.',
    env: {},
    color: false,
    setExitCode: () => {},
  };
  return { io, out };
}

async function nats(name: string): Promise<Broker> {
  const b = await createNatsBroker({ url: NATS_URL, name });
  open.push(b);
  return b;
}

describe('agent reload across a cluster (NATS)', () => {
  it('lists the members, gathers their acks, names the silent one and exits 3', async () => {
    // Subjects of this test only: the NATS server is shared.
    const base = `t${randomUUID().replaceAll('-', '').slice(0, 10)}`;
    const subjects = {
      subject: `${base}.reload`,
      ackSubject: `${base}.reload.ack`,
      membersSubject: `${base}.members`,
    };
    const a = await nats('a');
    a.subscribe(
      subjects.membersSubject,
      (msg) =>
        void a.publish(msg.reply!, {
          members: ['a', 'b', 'c'].map((id) => ({
            daemon_id: id,
            host: `${id}.lan`,
            seen_ago_ms: id === 'c' ? 9000 : 500,
          })),
        }),
    );
    for (const id of ['a', 'b']) {
      const d = id === 'a' ? a : await nats(id);
      d.subscribe(subjects.subject, (msg) => {
        const { request_id } = msg.data as { request_id: string };
        void d.publish(msg.reply!, {
          request_id,
          daemon_id: id,
          host: `${id}.lan`,
          config_version: 4,
          config_hash: 'abcdef0123',
          version: 4,
          applied: ['assistant'],
          rejected: [],
          rejected_jobs: [],
          errors: [],
          restart_required: [],
          elapsed_ms: 20,
        });
      });
      await d.flush();
    }
    const cli = await nats('cli');
    const { io, out } = capture();
    expect(await tryClusterReload(io, cli, { json: false, timeoutMs: 500, ...subjects })).toBe(3);
    expect(out).toEqual([
      'reload v4: applied=1 rejected=0 elapsed=20ms',
      '  ✓ assistant',
      'daemons 2/3 answered:',
      expect.stringMatching(/^ {2}✓ [ab] \([ab]\.lan\): config v4 hash abcdef01 applied=1/),
      expect.stringMatching(/^ {2}✓ [ab] \([ab]\.lan\): config v4 hash abcdef01 applied=1/),
      '  ✗ c: no ack within 500 ms (last heartbeat 9 s ago)',
    ]);
  });

  it('no cluster behind the broker: undefined, so today`s reload runs', async () => {
    const cli = await nats('cli');
    const { io, out } = capture();
    const subjects = {
      subject: 'x.reload',
      ackSubject: 'x.reload.ack',
      membersSubject: `m${randomUUID().slice(0, 8)}.members`,
    };
    expect(await tryClusterReload(io, cli, { json: false, timeoutMs: 500, ...subjects })).toBeUndefined();
    const local = await createLocalBroker();
    open.push(local);
    expect(await tryClusterReload(io, local, { json: false, timeoutMs: 500, ...subjects })).toBeUndefined();
    expect(out).toEqual([]);
  });
});
