/**
 * Lease holder ids that say which process holds a lease: `<host>:<pid>:<start>:<random>`, where `start` is
 * the process's start time as the kernel counts it (`/proc/<pid>/stat`, field 22), prefixed by the boot id. A lease whose holder is a
 * process of this host that is gone (no such pid, or the pid now belongs to a process started at another
 * time) can be taken over at once instead of after a TTL that can be days.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

export interface HolderIdentity {
  host: string;
  pid: number;
  /** Kernel start time of the process, or `-` where it cannot be read. */
  start: string;
}

/** This boot of the host (Linux): with it, a start time of a process before a reboot never matches one after. */
const bootId = ((): string => {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().slice(0, 8);
  } catch {
    return '0';
  }
})();

/**
 * The start of a process: `<boot>.<clock ticks since boot>` (Linux, `/proc/<pid>/stat` field 22); `null` when
 * unknown or gone. The boot id keeps a daemon that gets the same pid at the same tick after a reboot apart.
 */
export function processStartTime(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Field 2 (the command) is in parentheses and may hold spaces: count fields after its closing one.
  const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  return ticks === undefined ? null : `${bootId}.${ticks}`;
}

export function holderId(pid = process.pid, host = hostname()): string {
  return `${host}:${pid}:${processStartTime(pid) ?? '-'}:${randomBytes(4).toString('hex')}`;
}

export function parseHolder(id: string): HolderIdentity | null {
  const parts = id.split(':');
  if (parts.length < 4) return null;
  const [pid, start] = parts.slice(-3) as [string, string, string];
  const host = parts.slice(0, -3).join(':');
  if (!host || !/^\d+$/.test(pid)) return null;
  return { host, pid: Number(pid), start };
}

export interface ProcessProbe {
  host: string;
  /** Whether a process with this pid exists. */
  alive(pid: number): boolean;
  startTime(pid: number): string | null;
}

const localProbe: ProcessProbe = {
  host: hostname(),
  alive(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      // EPERM: it exists but belongs to someone else.
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  },
  startTime: processStartTime,
};

/**
 * True only when the holder is certainly gone: it ran on this host, and its pid is free or now belongs to a
 * process started at another time. Holders of other hosts, or ids of an older format, are never judged.
 */
export function holderIsGone(id: string, probe: ProcessProbe = localProbe): boolean {
  const h = parseHolder(id);
  if (!h || h.host !== probe.host) return false;
  if (!probe.alive(h.pid)) return true;
  if (h.start === '-') return false;
  const now = probe.startTime(h.pid);
  return now !== null && now !== h.start;
}
