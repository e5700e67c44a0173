// The Telegram fake's record of getUpdates calls: when each started and ended, how it was answered, and
// whether it was cut off by a second consumer of the bot.
import { afterEach, describe, expect, it } from 'vitest';
import { createFakeTelegram, type FakeTelegram } from './fake-telegram.js';

const TOKEN = '123:fake-token';
let fake: FakeTelegram | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** A clock that moves only when told, so the records are exact. */
function manualClock(start: number): { now: () => number; set(t: number): void } {
  let t = start;
  return { now: () => t, set: (v) => void (t = v) };
}

const getUpdates = (f: FakeTelegram, query: string, signal?: AbortSignal): Promise<Response> =>
  fetch(`${f.baseUrl}/bot${TOKEN}/getUpdates?${query}`, signal ? { signal } : {});

async function until(cond: () => boolean): Promise<void> {
  const end = Date.now() + 5000;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setImmediate(r));
  }
}

describe('fake Telegram: polls', () => {
  it('records a call answered at once with its start, end and status', async () => {
    const clock = manualClock(1000);
    fake = await createFakeTelegram({ token: TOKEN, now: clock.now });
    const id = fake.enqueueText({ chatId: 7, text: 'hi' });
    const res = await getUpdates(fake, `offset=${id}&timeout=5`);
    expect(res.status).toBe(200);
    expect(fake.polls).toEqual([
      { offset: id, startedAt: 1000, endedAt: 1000, status: 200, conflict: false },
    ]);
  });

  it('records a long poll cut off by a second one as a 409 conflict ending when the second arrived', async () => {
    const clock = manualClock(1000);
    fake = await createFakeTelegram({ token: TOKEN, now: clock.now });
    const first = getUpdates(fake, 'timeout=30');
    await until(() => fake!.polls.length === 1);
    expect(fake.polls[0]!.endedAt).toBeUndefined();
    clock.set(4000);
    const second = getUpdates(fake, 'timeout=30');
    expect((await first).status).toBe(409);
    clock.set(6000);
    fake.enqueueText({ chatId: 7, text: 'hi' });
    expect((await second).status).toBe(200);
    expect(fake.polls).toEqual([
      { offset: undefined, startedAt: 1000, endedAt: 4000, status: 409, conflict: true },
      { offset: undefined, startedAt: 4000, endedAt: 6000, status: 200, conflict: false },
    ]);
  });

  it('records an injected failure as answered with its status, not as a conflict', async () => {
    const clock = manualClock(1000);
    fake = await createFakeTelegram({ token: TOKEN, now: clock.now });
    fake.failGetUpdates(409);
    expect((await getUpdates(fake, 'offset=5')).status).toBe(409);
    expect(fake.polls).toEqual([{ offset: 5, startedAt: 1000, endedAt: 1000, status: 409, conflict: false }]);
    // The existing record of offsets still lists only the calls that were not failed on purpose.
    expect(fake.getUpdatesOffsets).toEqual([]);
  });

  it('records a call whose client went away as ended, without a status', async () => {
    const clock = manualClock(1000);
    fake = await createFakeTelegram({ token: TOKEN, now: clock.now });
    const abort = new AbortController();
    const call = getUpdates(fake, 'timeout=30', abort.signal).catch(() => 'aborted');
    await until(() => fake!.polls.length === 1);
    clock.set(2500);
    abort.abort();
    expect(await call).toBe('aborted');
    await until(() => fake!.polls[0]!.endedAt !== undefined);
    expect(fake.polls).toEqual([{ offset: undefined, startedAt: 1000, endedAt: 2500, conflict: false }]);
  });
});
