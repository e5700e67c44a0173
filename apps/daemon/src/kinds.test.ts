import { createKindRegistry } from '@agent/poller-runtime';
import { describe, expect, it } from 'vitest';
import { withBuiltinKinds } from './kinds.js';

describe('withBuiltinKinds (what a reload preview validates with)', () => {
  it('adds the built-in kinds to a copy and leaves the running registry as it is', async () => {
    const running = createKindRegistry();
    running.recordPackageFailure({
      package: '@acme/kind',
      code: 'POLLER_KIND_PACKAGE',
      message: 'not found',
    });
    const copy = await withBuiltinKinds(running);
    expect(copy.list().map((k) => k.kind)).toEqual(['calendar', 'mail', 'rss', 'webhook_poll']);
    expect(copy.failedPackages()).toEqual(running.failedPackages());
    expect(running.list()).toEqual([]);
    // A registry that has them already gives the same kinds, once each.
    const again = await withBuiltinKinds(copy);
    expect(again.list().map((k) => k.kind)).toEqual(['calendar', 'mail', 'rss', 'webhook_poll']);
  });
});
