// C4 (one consumer of the bot at a time) and C5 (a killed owner's bot polled again in time) over a history's
// chat part: the Telegram fake's record of getUpdates calls and the daemons' poll-loop spans.
import { pollerAt, type ChatHistory } from './chat-history.js';
import { chatSlackMs, iso, sample, type ChatCheckParams } from './checks-chat.js';
import type { Violation } from './checks-delivery.js';
import type { History } from './history.js';
import type { AppliedFault } from './nemesis-run.js';

/**
 * A pause's trust window: from its start to its heal + owner TTL + slack. A frozen owner cannot end the
 * getUpdates it has open, so its lease's expiry hands the bot to a new owner whose call meets it; once thawed
 * it may send one more before it sees that it lost the instance. No other fault opens one: a killed owner's
 * connection closes with it, a restarted one stops polling first, and one cut off from PostgreSQL stops when
 * its membership stops being trusted, before its lease expires where the others look.
 */
const inTrustWindow = (f: AppliedFault, t: number, p: ChatCheckParams): boolean =>
  f.kind === 'pause' && f.startedAt <= t && t <= f.healedAt + p.ownerTtlMs + chatSlackMs(p);

/**
 * The moments two getUpdates of the bot were open at once: when the fake cut an open one off with 409 because
 * another arrived, and when one started before an earlier one ended without such a cut.
 */
function concurrentPolls(c: ChatHistory): number[] {
  const at: number[] = [];
  let openUntil = -Infinity;
  for (const poll of c.polls) {
    if (poll.startedAt < openUntil) at.push(poll.startedAt);
    if (poll.conflict && poll.endedAt !== undefined) at.push(poll.endedAt);
    // A poll cut off by a conflict ended when the next arrived: that overlap is counted above, once.
    const end = poll.conflict ? -Infinity : (poll.endedAt ?? Infinity);
    openUntil = Math.max(openUntil, end);
  }
  return at.sort((a, b) => a - b);
}

/** C4: the fake never saw two concurrent getUpdates of the bot outside every pause's trust window. */
export function checkSingleConsumer(
  h: History,
  c: ChatHistory,
  p: ChatCheckParams,
): { violations: Violation[]; overlaps: number; excused: number } {
  const moments = concurrentPolls(c);
  const bad = moments.filter((t) => !h.faults.some((f) => inTrustWindow(f, t, p)));
  return {
    violations:
      bad.length === 0
        ? []
        : [
            {
              invariant: 'C4',
              message: `${bad.length} times two getUpdates of the bot were open at once outside every pause's trust window: ${sample(bad.map(iso))}`,
            },
          ],
    overlaps: moments.length,
    excused: moments.length - bad.length,
  };
}

/**
 * C5: after a kill of the daemon running the bot's poll loop (from its logs), the fake sees a getUpdates
 * start within owner TTL + slack. The message names the daemon that logged polling next.
 */
export function checkOwnerTakeover(
  h: History,
  c: ChatHistory,
  p: ChatCheckParams,
): { violations: Violation[]; ownerKills: number; takeoversMs: number[] } {
  const bound = p.ownerTtlMs + chatSlackMs(p);
  const out: Violation[] = [];
  const takeoversMs: number[] = [];
  let ownerKills = 0;
  for (const f of h.faults.filter((x) => x.kind === 'kill' && x.daemonId !== undefined)) {
    // Just before it struck: the kill itself ends the victim's span.
    if (pollerAt(c.pollers, f.startedAt - 1) !== f.daemonId) continue;
    ownerKills++;
    const next = c.polls.find((x) => x.startedAt > f.startedAt);
    const took = next === undefined ? undefined : next.startedAt - f.startedAt;
    if (took !== undefined) takeoversMs.push(took);
    if (took === undefined ? h.endedAt - f.startedAt <= bound : took <= bound) continue;
    const heir = c.pollers.find((s) => s.from > f.startedAt);
    out.push({
      invariant: 'C5',
      message: `kill of the bot's poller ${f.daemonId} at ${iso(f.startedAt)}: ${took === undefined ? 'never polled again' : `polled again after ${took} ms`} (bound ${bound} ms; next poller by its log: ${heir ? `${heir.daemonId} at ${iso(heir.from)}` : 'none'})`,
    });
  }
  return { violations: out, ownerKills, takeoversMs };
}
