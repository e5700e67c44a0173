import { testPollerKind } from '@agent/poller-core/testing';
import { exampleCounterPollerKind } from './index.js';

const base = { deliver: { channel: 'log', to: 'me' }, message_template: 'Count {n} ({label})' };

testPollerKind(exampleCounterPollerKind, {
  validConfigs: [
    base,
    { ...base, start: 10, prefix: 'c' },
    { ...base, max_per_tick: 1, dispatch_delay_ms: 0 },
  ],
  invalidConfigs: [
    {},
    { ...base, start: -1 },
    { ...base, prefix: 'Upper Case' },
    { ...base, message_template: 'Count {nope}' },
    { ...base, start: 2_000_000_000 },
    { ...base, extra: true },
  ],
  scenarios: {
    ok: () => ({ config: base }),
    transient: () => ({ config: { ...base, simulate_failure: 'transient' } }),
    permanent: () => ({ config: { ...base, simulate_failure: 'permanent' } }),
  },
});
