// Cluster mode under faults, end to end: three daemon processes in cluster mode against a throwaway
// PostgreSQL and NATS, each link through a fault proxy, twelve feed jobs delivering to a recording Telegram
// fake, 20 chats talking to that bot through a fake model, and a seeded nemesis playing every fault kind for
// 60 s. The history checker then proves: no item lost, each duplicate charged to a fault, no write from a
// stale epoch, takeover within the heartbeat window with a 48 h lease TTL, `agent reload` exiting 3 and
// naming the daemon cut off from NATS (which then runs the pushed version), and no early tick from a daemon
// whose clock is 90 s off; and for chat: every message answered, in order per chat, duplicates only from
// faults, one getUpdates consumer of the bot at a time, a killed poller replaced within the owner TTL + 3 s,
// each exchange in memory once, and every turn given its chat's whole history. `pnpm jepsen` runs the same
// for longer.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECK_PARAMS, runClusterFaults } from './cluster/cluster-run.js';
import { FAULT_KINDS } from './cluster/nemesis.js';

/** Its 60 s schedule (3-6 s apart, skew held 10 s) has all six fault kinds. */
const SEED = 60;

describe('cluster mode under faults', () => {
  it(`three daemons through kill, pause, partitions, clock skew and a database restart (seed ${SEED}): verdict PASS`, async () => {
    const log: string[] = [];
    const run = await runClusterFaults({
      seed: SEED,
      nemesisMs: 60_000,
      jobs: 12,
      gapMs: [3000, 6000],
      skewHoldMs: 10_000,
      chat: true,
      log: (line) => log.push(line),
      artifacts: { dir: mkdtempSync(join(tmpdir(), `fault-run-${SEED}-`)), onlyOnFail: true },
    });
    console.log(`fault run seed=${SEED}\n${run.report}`);
    expect([...new Set(run.faults.map((f) => f.kind))].sort()).toEqual([...FAULT_KINDS].sort());
    expect(run.result.violations, `${run.report}\n${log.join('\n')}`).toEqual([]);
    expect(run.report).toMatch(/^verdict: PASS$/m);
    const s = run.result.stats;
    expect(s.received).toBe(s.published);
    // A killed, paused or cut-off holder's jobs moved, within the heartbeat window + 3 s (the TTL is 48 h).
    expect(s.takeovers).toBeGreaterThan(0);
    expect(s.maxTakeoverMs).toBeLessThanOrEqual(CHECK_PARAMS.heartbeatWindowMs + 3000);
    expect(run.report).toMatch(
      /^reload: with d\d cut off from NATS, agent reload exited 3; d\d ran config v\d+ /m,
    );
    // A whole number prints without decimals (`measured 90 s`).
    expect(run.report).toMatch(/^skew: d\d under -?90 s measured -?(89|90)(\.\d+)? s$/m);
    // Chat: turns ran with history, memory holds them, and a kill hit the bot's poller, which moved in time.
    const c = s.chat!;
    expect(c.messages).toBeGreaterThan(40);
    expect(c.turnsWithHistory).toBeGreaterThan(0);
    expect(c.memoryExchanges).toBeGreaterThan(0);
    expect(c.ownerKills).toBeGreaterThan(0);
    expect(c.maxOwnerTakeoverMs).toBeLessThanOrEqual(CHECK_PARAMS.chat!.ownerTtlMs + 3000);
  }, 240_000);
});
