import type { GuardedHttp, GuardedRequestOptions } from '@agent/guarded-http';
import { describe, expect, it } from 'vitest';
import { pollerHttp } from './http.js';

/** A base client that records the options of each request (the wrapper's only collaborator). */
function recording() {
  const seen: GuardedRequestOptions[] = [];
  const base = { request: (_url: string, o: GuardedRequestOptions) => (seen.push(o), Promise.resolve()) };
  return { base: base as unknown as GuardedHttp, seen };
}

describe('pollerHttp', () => {
  it('passes the tick signal, the kind signal, both combined, or none', async () => {
    const { base, seen } = recording();
    const tick = new AbortController();
    const own = new AbortController();
    await pollerHttp(base, tick.signal, false).request('http://x/');
    await pollerHttp(base, undefined, false).request('http://x/', { signal: own.signal });
    await pollerHttp(base, tick.signal, false).request('http://x/', { signal: own.signal });
    await pollerHttp(base, undefined, false).request('http://x/');
    expect(seen[0]!.signal).toBe(tick.signal);
    expect(seen[1]!.signal).toBe(own.signal);
    expect('signal' in seen[3]!).toBe(false);
    const both = seen[2]!.signal!;
    expect(both.aborted).toBe(false);
    own.abort(new Error('kind gave up'));
    expect(both.aborted).toBe(true);
  });

  it('allows private networks when the job or the request does', async () => {
    const { base, seen } = recording();
    await pollerHttp(base, undefined, true).request('http://x/');
    await pollerHttp(base, undefined, false).request('http://x/', { allowPrivateNetworks: true });
    await pollerHttp(base, undefined, false).request('http://x/');
    expect(seen.map((o) => o.allowPrivateNetworks)).toEqual([true, true, false]);
  });
});
