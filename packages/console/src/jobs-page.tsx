/** @jsxImportSource hono/jsx */
/**
 * The jobs table: filter and sort by query string (works without JavaScript), live rows (`data-live`). A
 * cluster daemon's jobs carry their holder: a Holder column names the daemon ticking each one.
 */
import type { AdminJobList, AdminJobSummary } from '@agent/admin-api';
import type { FC } from 'hono/jsx';
import { filterAndSort, formatTime, holderDaemon, type JobQuery, type SortKey } from './format.js';

const COLUMNS: [SortKey | null, string][] = [
  ['id', 'Job'],
  ['kind', 'Kind'],
  ['agent', 'Agent'],
  [null, 'Schedule'],
  [null, 'Paused'],
  ['breaker', 'Breaker'],
  ['last_run_at', 'Last run'],
  ['next_run_at', 'Next run'],
  ['errors', 'Errors'],
];

const sortHref = (query: JobQuery, key: SortKey): string => {
  const desc = query.sort === key && !query.desc;
  const p = new URLSearchParams({
    ...(query.q ? { q: query.q } : {}),
    sort: key,
    dir: desc ? 'desc' : 'asc',
  });
  return `/?${p.toString()}`;
};

const Row: FC<{ job: AdminJobSummary; cluster: boolean }> = ({ job, cluster }) => (
  <tr data-job={job.id} data-breaker={job.breaker} data-paused={job.paused ? 'yes' : 'no'}>
    <th scope="row">
      <a href={`/jobs/${encodeURIComponent(job.id)}`}>{job.id}</a>
      {job.definition === 'stale' ? (
        <span class="tag bad" title={job.definition_error ?? ''}>
          stale
        </span>
      ) : null}
    </th>
    <td>{job.kind}</td>
    <td>{job.agent}</td>
    <td>{job.schedule}</td>
    <td>{job.paused ? 'yes' : 'no'}</td>
    <td class={`breaker ${job.breaker}`}>{job.breaker}</td>
    <td>
      {formatTime(job.last_run_at)} <span class={`st ${job.last_status ?? ''}`}>{job.last_status ?? ''}</span>
    </td>
    <td>{formatTime(job.next_run_at)}</td>
    <td class="num">{job.consecutive_errors}</td>
    {cluster ? <td data-field="holder">{holderDaemon(job.holder)}</td> : null}
  </tr>
);

export const JobsPage: FC<{ list: AdminJobList; query: JobQuery }> = ({ list, query }) => {
  const jobs = filterAndSort(list.jobs, query);
  const cluster = list.jobs.some((j) => j.holder !== undefined);
  const columns: [SortKey | null, string][] = cluster ? [...COLUMNS, [null, 'Holder']] : COLUMNS;
  return (
    <>
      <form class="filter" method="get" action="/" role="search">
        <label for="q">Filter</label>
        <input id="q" name="q" type="search" value={query.q} placeholder="id, kind, agent, status…" />
        <input type="hidden" name="sort" value={query.sort} />
        <input type="hidden" name="dir" value={query.desc ? 'desc' : 'asc'} />
        <button type="submit">Apply</button>
      </form>
      <div class="scroll" id="jobs" data-live>
        <table>
          <caption>
            {jobs.length} of {list.jobs.length} job(s)
          </caption>
          <thead>
            <tr>
              {columns.map(([key, label]) =>
                key ? (
                  <th
                    scope="col"
                    aria-sort={query.sort === key ? (query.desc ? 'descending' : 'ascending') : undefined}
                  >
                    <a href={sortHref(query, key)}>{label}</a>
                  </th>
                ) : (
                  <th scope="col">{label}</th>
                ),
              )}
            </tr>
          </thead>
          <tbody>
            {jobs.map((j) => (
              <Row job={j} cluster={cluster} />
            ))}
          </tbody>
        </table>
        {list.rejected.length > 0 ? (
          <section aria-label="Rejected jobs">
            <h2>Rejected in pollers.yaml</h2>
            <ul>
              {list.rejected.map((r) => (
                <li>
                  <strong>{r.id}</strong>: {r.running ? 'runs its previous definition' : 'not running'}:{' '}
                  {r.errors.join('; ')}
                </li>
              ))}
            </ul>
          </section>
        ) : null}
      </div>
    </>
  );
};
