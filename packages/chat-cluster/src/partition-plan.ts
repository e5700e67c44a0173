/**
 * Which inbound partitions this daemon should take and which it should give up, decided from one look at
 * the leases. Each daemon aims at ⌈partitions / live members⌉. It takes free partitions up to that target,
 * and gives partitions above it up (after draining them) only as far as other members lack partitions that
 * no free one can fill: so a lone daemon keeps them all, and a newcomer gets its share from the others.
 * A partition nobody took for several rounds is taken even above the target (the live count can be stale,
 * e.g. a crashed member still counted), so that no chat waits for the membership to notice; and at that live
 * count nothing is given up any more, or the orphans would go round and round.
 */
import { fnv1a } from './stream.js';

/** Rounds a partition must be seen free before it is taken above the target. */
export const ORPHAN_ROUNDS = 3;

export interface PartitionPlanInput {
  partitions: number;
  /** Live members, this daemon included; below 1 counts as 1. */
  live: number;
  /** This daemon's holder id: where it starts looking for free partitions. */
  holderId: string;
  /** Partitions this daemon holds, draining ones included. */
  mine: readonly number[];
  /** Of those, the ones draining now. */
  draining: readonly number[];
  /** Unexpired leases of other holders: partition → holder. */
  others: ReadonlyMap<number, string>;
  /** Per free partition, how many rounds in a row (this one included) it was seen free. */
  freeRounds: ReadonlyMap<number, number>;
  /** False once paused: hold on, take nothing new. */
  taking: boolean;
  /** The live count at which this daemon last took a partition nobody else wanted, if it did. */
  orphanedAtLive?: number | undefined;
}

export interface PartitionPlan {
  /** ⌈partitions / live⌉. */
  target: number;
  /** Free partitions to try to take now. */
  take: number[];
  /** Partitions that should be draining (to release once drained): keep draining these, stop draining others. */
  drain: number[];
  /** Whether `take` holds a partition taken above the target because nobody else took it. */
  takesOrphans: boolean;
}

export function planPartitions(o: PartitionPlanInput): PartitionPlan {
  const live = Math.max(1, Math.floor(o.live));
  const target = Math.ceil(o.partitions / live);
  // Each daemon walks the partitions from its own starting point, so that daemons taking at once mostly
  // ask for different partitions.
  const start = fnv1a(o.holderId) % o.partitions;
  const order = Array.from({ length: o.partitions }, (_, i) => (start + i) % o.partitions);
  const mine = new Set(o.mine);
  const free = order.filter((p) => !mine.has(p) && !o.others.has(p));

  const take: number[] = [];
  let takesOrphans = false;
  if (o.taking) {
    let room = target - mine.size;
    for (const p of free) {
      if (room > 0) {
        take.push(p);
        room -= 1;
      } else if ((o.freeRounds.get(p) ?? 0) >= ORPHAN_ROUNDS) {
        take.push(p);
        takesOrphans = true;
      }
    }
  }

  // What other members lack that the free partitions left over cannot give them.
  const counts = new Map<string, number>();
  for (const holder of o.others.values()) {
    // A lapsed lease of this daemon's own (lost locally, not yet expired) is no other member.
    if (holder !== o.holderId) counts.set(holder, (counts.get(holder) ?? 0) + 1);
  }
  let lacking = Math.max(0, live - 1 - counts.size) * target;
  for (const n of counts.values()) lacking += Math.max(0, target - n);
  const freeLeft = free.length - take.length;
  const surplus = mine.size + take.length - target;
  const overstated =
    takesOrphans || (o.orphanedAtLive !== undefined && Math.max(1, Math.floor(o.orphanedAtLive)) === live);
  const giveUp = overstated ? 0 : Math.max(0, Math.min(surplus, lacking - freeLeft, mine.size));

  // Partitions already draining go first, then those latest in this daemon's order.
  const draining = new Set(o.draining);
  const byPreference = order.filter((p) => mine.has(p)).toReversed();
  const drain = [
    ...byPreference.filter((p) => draining.has(p)),
    ...byPreference.filter((p) => !draining.has(p)),
  ].slice(0, giveUp);
  return { target, take, drain: drain.sort((a, b) => a - b), takesOrphans };
}
