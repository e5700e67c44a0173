// Process figures from procfs (Linux): CPU time and memory of a pid, and the CPU of every process of a command.
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SEC = 100; // procfs clock ticks (USER_HZ)

/** The fields of /proc/<pid>/stat after the command name (field 3 of the man page is index 0). */
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return {
    comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    f: stat.slice(stat.lastIndexOf(')') + 2).split(' '),
  };
}

/** User plus system CPU of the process so far, in ms. */
export function cpuMs(pid) {
  const { f } = statFields(pid);
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_SEC;
}

/** A field of /proc/<pid>/status in MB (`VmRSS`, `VmHWM`). */
export function memMb(pid, field) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${field}:\\s+(\\d+) kB`));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** CPU ms so far of every live process whose command name is `comm`, by pid. */
export function cpuOfCommand(comm) {
  const out = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const s = statFields(entry);
      if (s.comm === comm)
        out.set(Number(entry), ((Number(s.f[11]) + Number(s.f[12])) * 1000) / TICKS_PER_SEC);
    } catch {
      // The process ended while the list was read.
    }
  }
  return out;
}
