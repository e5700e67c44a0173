/** Pure helpers of the pages: times, durations, and the jobs table's filter and sort. */
import type { AdminJobSummary } from '@agent/admin-api';

/** `2026-03-01 08:00:00Z`, like the CLI; `-` for none. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** `3d 4h`, `2h 5m`, `42s`: the two largest units. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const parts: [number, string][] = [
    [Math.floor(s / 86400), 'd'],
    [Math.floor((s % 86400) / 3600), 'h'],
    [Math.floor((s % 3600) / 60), 'm'],
    [s % 60, 's'],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  if (first < 0) return '0s';
  return parts
    .slice(first, first + 2)
    .filter(([n]) => n > 0)
    .map(([n, u]) => `${n}${u}`)
    .join(' ');
}

const SORT_KEYS = ['id', 'kind', 'agent', 'breaker', 'last_run_at', 'next_run_at', 'errors'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export interface JobQuery {
  q: string;
  sort: SortKey;
  desc: boolean;
}

/** The jobs table's query string: `?q=<text>&sort=<column>&dir=asc|desc`; anything unknown is the default. */
export function jobQueryOf(params: {
  q?: string | undefined;
  sort?: string | undefined;
  dir?: string | undefined;
}): JobQuery {
  const sort = (SORT_KEYS as readonly string[]).includes(params.sort ?? '') ? (params.sort as SortKey) : 'id';
  return { q: (params.q ?? '').trim().slice(0, 200), sort, desc: params.dir === 'desc' };
}

const sortValue = (j: AdminJobSummary, key: SortKey): string | number => {
  if (key === 'errors') return j.consecutive_errors;
  const v = j[key];
  return typeof v === 'string' ? v : '';
};

/** The daemon of a cluster lease holder id (`<daemon_id>#<incarnation>`); `-` while no daemon holds the job. */
export function holderDaemon(holder: string | null | undefined): string {
  if (!holder) return '-';
  const hash = holder.indexOf('#');
  return hash > 0 ? holder.slice(0, hash) : holder;
}

/** Jobs whose id, kind, agent, schedule, breaker, last status or holder contain `q` (any case), sorted. */
export function filterAndSort(jobs: readonly AdminJobSummary[], query: JobQuery): AdminJobSummary[] {
  const q = query.q.toLowerCase();
  const hit = (j: AdminJobSummary) =>
    q === '' ||
    [
      j.id,
      j.kind,
      j.agent,
      j.schedule,
      j.breaker,
      j.last_status ?? '',
      j.paused ? 'paused' : '',
      j.holder ?? '',
    ]
      .join(' ')
      .toLowerCase()
      .includes(q);
  const dir = query.desc ? -1 : 1;
  return jobs.filter(hit).toSorted((a, b) => {
    const x = sortValue(a, query.sort);
    const y = sortValue(b, query.sort);
    if (x < y) return -dir;
    if (x > y) return dir;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}
