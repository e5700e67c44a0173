// J7 (reload during a NATS partition) and J9 (hygiene at the end) over a history.
import type { Violation } from './checks-delivery.js';
import type { History } from './history.js';

/** The longest a daemon cut off from NATS may take, after the heal, to run the version pushed meanwhile. */
const CONVERGE_AFTER_HEAL_MS = 10_000;

/** The report line `agent reload` prints for a daemon that did not answer. */
const missingLine = (daemonId: string): RegExp =>
  new RegExp(`^\\s*✗ ${daemonId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `, 'm');

/**
 * J7: `agent reload` issued while one daemon is cut off from NATS exits 3 and names that daemon as missing;
 * the daemon runs the version pushed during the partition at most 10 s after the heal.
 */
export function checkReloads(h: History): Violation[] {
  const out: Violation[] = [];
  for (const r of h.reloads) {
    const who = `reload during the NATS partition of ${r.daemonId}`;
    if (r.exitCode !== 3) out.push({ invariant: 'J7', message: `${who} exited ${r.exitCode}, not 3` });
    if (!missingLine(r.daemonId).test(r.output))
      out.push({ invariant: 'J7', message: `${who} did not name it as missing:\n${r.output.trimEnd()}` });
    if (r.healedAt === undefined) continue;
    const late = r.convergedAt === undefined ? undefined : r.convergedAt - r.healedAt;
    if (late === undefined || late > CONVERGE_AFTER_HEAL_MS)
      out.push({
        invariant: 'J7',
        message:
          late === undefined
            ? `${r.daemonId} never ran config v${r.pushedVersion} after the heal`
            : `${r.daemonId} ran config v${r.pushedVersion} ${late} ms after the heal (bound ${CONVERGE_AFTER_HEAL_MS} ms)`,
      });
  }
  return out;
}

/** A session idle in a transaction longer than this at the end is left over (between statements: briefly). */
export const IDLE_IN_TRANSACTION_MS = 1000;

/** J9: once quiet, every held lease belongs to a live daemon, and no transaction is left open. */
export function checkHygiene(h: History): Violation[] {
  const end = h.endState;
  if (end === undefined) return [];
  const out: Violation[] = [];
  if (end.orphanLeases.length > 0)
    out.push({
      invariant: 'J9',
      message: `${end.orphanLeases.length} leases held at the end by no live daemon: ${end.orphanLeases
        .slice(0, 5)
        .map((l) => `${l.jobId} (${l.holder})`)
        .join(', ')}`,
    });
  if (end.idleInTransaction.length > 0)
    out.push({
      invariant: 'J9',
      message: `${end.idleInTransaction.length} sessions idle in a transaction for more than ${IDLE_IN_TRANSACTION_MS} ms at the end: ${end.idleInTransaction.join('; ')}`,
    });
  return out;
}
