import { headers } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import {
  acceptedVersion,
  CONFIG_VERSION_HEADER,
  configWait,
  versionHeaders,
  type ConfigWait,
} from './config-version.js';

describe('the config version a message was accepted under', () => {
  it('round-trips through the header; a missing or malformed one reads as 0', () => {
    expect(acceptedVersion(versionHeaders(7))).toBe(7);
    expect(acceptedVersion(undefined)).toBe(0);
    for (const bad of ['', 'x', '-3', '1.5', '1e400']) {
      const h = headers();
      h.set(CONFIG_VERSION_HEADER, bad);
      expect(acceptedVersion(h), bad).toBe(0);
    }
  });

  const cases: [accepted: number, running: number, waitedMs: number, expected: ConfigWait][] = [
    [0, 1, 0, 'run'],
    [2, 2, 0, 'run'],
    [2, 5, 0, 'run'],
    [3, 2, 0, 'wait'],
    [3, 2, 14_999, 'wait'],
    [3, 2, 15_000, 'run-behind'],
    [3, 2, 60_000, 'run-behind'],
    [3, 3, 60_000, 'run'],
  ];
  it.each(cases)(
    'accepted v%i, running v%i, waited %i of 15000 ms: %s',
    (accepted, running, waited, expected) => {
      expect(configWait(accepted, running, waited, 15_000)).toBe(expected);
    },
  );
});
