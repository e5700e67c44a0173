// The job journal: each job's last deliveries and warnings/errors, newest first, 20 at most, in memory.
import { createMemoryLogger, type LogFields } from '@agent/log';
import { describe, expect, it } from 'vitest';
import { createJobJournal } from './job-journal.js';

/** A clock that moves one second per reading, from 2026-03-01 08:00:00Z. */
function clock(): () => Date {
  let t = Date.parse('2026-03-01T08:00:00.000Z');
  return () => new Date((t += 1000) - 1000);
}

type Level = 'debug' | 'info' | 'warn' | 'error';

describe('job journal: warnings and errors seen in the log', () => {
  const cases: [
    string,
    { level: Level; msg: string; fields?: LogFields; context?: LogFields },
    { job: string; entry: { message: string; reason: string | null } } | null,
  ][] = [
    [
      'a warn naming the job',
      {
        level: 'warn',
        msg: 'poller tick failed (transient)',
        fields: { job_id: 'news', reason: 'HTTP 503' },
      },
      { job: 'news', entry: { message: 'poller tick failed (transient)', reason: 'HTTP 503' } },
    ],
    [
      'an error whose job is named by its child logger',
      {
        level: 'error',
        msg: 'poller job paused',
        fields: { reason: 'HTTP 401' },
        context: { job_id: 'mail' },
      },
      { job: 'mail', entry: { message: 'poller job paused', reason: 'HTTP 401' } },
    ],
    [
      'err when there is no reason',
      { level: 'error', msg: 'poller scheduler error', fields: { job_id: 'news', err: 'boom' } },
      { job: 'news', entry: { message: 'poller scheduler error', reason: 'boom' } },
    ],
    [
      'error when there is neither reason nor err',
      { level: 'warn', msg: 'x', fields: { job_id: 'news', error: 'bad' } },
      { job: 'news', entry: { message: 'x', reason: 'bad' } },
    ],
    [
      'reason first of the three',
      { level: 'warn', msg: 'x', fields: { job_id: 'news', reason: 'r', err: 'e', error: 'x' } },
      { job: 'news', entry: { message: 'x', reason: 'r' } },
    ],
    [
      'a non-string reason, as text',
      { level: 'warn', msg: 'x', fields: { job_id: 'news', reason: 503 } },
      { job: 'news', entry: { message: 'x', reason: '503' } },
    ],
    [
      'no reason at all',
      { level: 'warn', msg: 'poller lease taken over', fields: { job_id: 'news' } },
      { job: 'news', entry: { message: 'poller lease taken over', reason: null } },
    ],
    ['an info record', { level: 'info', msg: 'poller items delivered', fields: { job_id: 'news' } }, null],
    ['a debug record', { level: 'debug', msg: 'poller tick', fields: { job_id: 'news' } }, null],
    ['a warn naming no job', { level: 'warn', msg: 'poller claims work again' }, null],
    ['a job id that is not a string', { level: 'error', msg: 'x', fields: { job_id: 7 } }, null],
  ];
  it.each(cases)('%s', (_name, rec, expected) => {
    const inner = createMemoryLogger();
    const journal = createJobJournal(clock());
    const base = journal.tap(inner);
    const logger = rec.context ? base.child(rec.context) : base;
    logger[rec.level](rec.msg, rec.fields);
    // Every record reaches the inner logger, noted or not.
    expect(inner.records.map((r) => [r.level, r.msg])).toEqual([[rec.level, rec.msg]]);
    const all = ['news', 'mail'].map((id) => [id, journal.errors(id)] as const).filter(([, e]) => e.length);
    expect(all).toEqual(
      expected ? [[expected.job, [{ at: '2026-03-01T08:00:00.000Z', ...expected.entry }]]] : [],
    );
  });

  it('keeps the last 20 per job, newest first, each job apart', () => {
    const journal = createJobJournal(clock());
    const logger = journal.tap(createMemoryLogger());
    for (let i = 1; i <= 25; i++) logger.warn(`failure ${i}`, { job_id: 'news' });
    logger.error('other', { job_id: 'mail' });
    const news = journal.errors('news');
    expect(news).toHaveLength(20);
    expect(news[0]).toEqual({ at: '2026-03-01T08:00:24.000Z', message: 'failure 25', reason: null });
    expect(news[19]!.message).toBe('failure 6');
    expect(journal.errors('mail').map((e) => e.message)).toEqual(['other']);
    expect(journal.errors('none')).toEqual([]);
  });
});

describe('job journal: deliveries', () => {
  const cases: [string, [string, boolean][], string[]][] = [
    ['none', [], []],
    ['one', [['a', true]], ['a delivered']],
    [
      'newest first, failures too',
      [
        ['a', true],
        ['b', false],
        ['c', true],
      ],
      ['c delivered', 'b failed', 'a delivered'],
    ],
  ];
  it.each(cases)('%s', (_name, items, expected) => {
    const journal = createJobJournal(clock());
    for (const [item, ok] of items) journal.delivered('news', { item, channel: 'log', to: 'op', ok });
    expect(journal.deliveries('news').map((d) => `${d.item} ${d.ok ? 'delivered' : 'failed'}`)).toEqual(
      expected,
    );
    expect(journal.deliveries('other')).toEqual([]);
  });

  it('stamps each with the clock, keeps 20, and hands out copies', () => {
    const journal = createJobJournal(clock());
    for (let i = 1; i <= 21; i++)
      journal.delivered('news', { item: `i${i}`, channel: 'chat_a', to: 'ops', ok: true });
    const list = journal.deliveries('news');
    expect(list).toHaveLength(20);
    expect(list[0]).toEqual({
      item: 'i21',
      channel: 'chat_a',
      to: 'ops',
      ok: true,
      at: '2026-03-01T08:00:20.000Z',
    });
    expect(list[19]!.item).toBe('i2');
    list.length = 0;
    expect(journal.deliveries('news')).toHaveLength(20);
  });
});
