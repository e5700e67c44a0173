import { createMemoryLogger } from '@agent/log';
import { describe, expect, it } from 'vitest';
import type { PartitionConsumer } from './consumer.js';
import type { PartitionLease, PartitionLeases } from './partition-leases.js';
import { startPartitionOwner } from './partition-owner.js';

/** Leases of one daemon alone in the cluster, in memory: every free partition is its to take. */
function soloLeases(): PartitionLeases & { released: number[] } {
  const held = new Map<number, number>();
  const released: number[] = [];
  return {
    released,
    renew: async (ls) => ls.filter((l) => held.get(l.partition) === l.term),
    acquire: async (ps) =>
      ps.filter((p) => !held.has(p)).map((p): PartitionLease => (held.set(p, 1), { partition: p, term: 1 })),
    release: async (ls) => {
      for (const l of ls) {
        held.delete(l.partition);
        released.push(l.partition);
      }
    },
    holders: async () => new Map(Array.from(held.keys(), (p) => [p, 'me#1'])),
  };
}

const idleConsumer = (partition: number): PartitionConsumer => ({
  partition,
  inFlight: () => 0,
  settled: async () => {},
  pause: async () => {},
  resume: () => {},
  giveBack: async () => {},
  lose: () => {},
});

describe('partition owner: giving partitions back', () => {
  it.each([
    { confirmed: true, released: [0, 1], warned: 0 },
    { confirmed: false, released: [], warned: 1 },
  ])(
    'ends the leases at once only when the server confirmed the acks (confirmed: $confirmed)',
    async ({ confirmed, released, warned }) => {
      const leases = soloLeases();
      const logger = createMemoryLogger();
      const owner = startPartitionOwner({
        partitions: 2,
        holderId: 'me#1',
        leases,
        liveMembers: async () => 1,
        ttlMs: 60_000,
        drainTimeoutMs: 1000,
        consume: idleConsumer,
        flush: async () => confirmed,
        logger,
      });
      await owner.round();
      expect(owner.owned()).toEqual([0, 1]);
      await owner.stop();
      expect(owner.owned()).toEqual([]);
      expect(leases.released).toEqual(released);
      expect(
        logger.find('chat inbound partitions left to expire: the server did not confirm their acks'),
      ).toHaveLength(warned);
    },
  );
});
