/** @jsxImportSource hono/jsx */
/** One job: status, actions (run, pause, resume, reset), config (redacted by the API), state, deliveries, errors. */
import type { AdminJobDetail } from '@agent/admin-api';
import type { FC } from 'hono/jsx';
import { formatTime } from './format.js';

// The actions are a live part of their own: while a button holds the focus, the facts below still refresh.
const Actions: FC<{ job: AdminJobDetail }> = ({ job }) => (
  <div class="actions" role="group" aria-label="Job actions" id="job-actions" data-live>
    <button type="button" data-action="run" data-job={job.id}>
      Run now
    </button>
    {job.paused ? (
      <button type="button" data-action="resume" data-job={job.id}>
        Resume
      </button>
    ) : (
      <button type="button" data-action="pause" data-job={job.id}>
        Pause
      </button>
    )}
    <button type="button" class="danger" data-action="reset" data-job={job.id}>
      Reset…
    </button>
    <noscript>
      <p>
        The actions need JavaScript; the CLI does the same: agent pollers run|pause|resume|reset {job.id}.
      </p>
    </noscript>
  </div>
);

export const JobPage: FC<{ job: AdminJobDetail }> = ({ job }) => (
  <>
    <Actions job={job} />
    <div id="job" data-live>
      <dl class="facts">
        <dt>Kind</dt>
        <dd>{job.kind}</dd>
        <dt>Agent</dt>
        <dd>{job.agent}</dd>
        <dt>Schedule</dt>
        <dd>{job.schedule}</dd>
        <dt>Paused</dt>
        <dd data-field="paused">{job.paused ? 'yes' : 'no'}</dd>
        <dt>Breaker</dt>
        <dd data-field="breaker" class={`breaker ${job.breaker}`}>
          {job.breaker} ({job.consecutive_errors} consecutive errors)
        </dd>
        <dt>Last run</dt>
        <dd data-field="last-run">
          {formatTime(job.last_run_at)} {job.last_status ? `(${job.last_status})` : ''}
        </dd>
        <dt>Last error</dt>
        <dd>{job.last_error ?? '-'}</dd>
        <dt>Next run</dt>
        <dd>{formatTime(job.next_run_at)}</dd>
        <dt>Definition</dt>
        <dd>{job.definition === 'stale' ? `stale: ${job.definition_error ?? ''}` : 'current'}</dd>
        <dt>Deliver</dt>
        <dd>{job.deliver ? `${job.deliver.channel} → ${job.deliver.to}` : '-'}</dd>
        <dt>Cursor</dt>
        <dd data-field="cursor">
          {job.cursor?.present ? `${job.cursor.bytes} bytes` : 'none'}; {job.seen_ids ?? 0} seen id(s);
          baselined {job.baselined ? 'yes' : 'no'}
        </dd>
        <dt>Lease</dt>
        <dd data-field="lease">
          {job.lease?.holder
            ? `${job.lease.holder} (epoch ${job.lease.epoch}, expires ${formatTime(job.lease.expires_at)})`
            : job.lease
              ? `none (last epoch ${job.lease.epoch})`
              : 'none'}
        </dd>
      </dl>
      <h2>Last deliveries</h2>
      {job.recent_deliveries?.length ? (
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Item</th>
                <th scope="col">Channel</th>
                <th scope="col">Recipient</th>
                <th scope="col">Result</th>
              </tr>
            </thead>
            <tbody>
              {job.recent_deliveries.map((d) => (
                <tr>
                  <td>{formatTime(d.at)}</td>
                  <td>{d.item}</td>
                  <td>{d.channel}</td>
                  <td>{d.to}</td>
                  <td class={d.ok ? 'ok' : 'bad'}>{d.ok ? 'delivered' : 'failed'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p>None since the daemon started.</p>
      )}
      <h2>Last errors</h2>
      {job.recent_errors?.length ? (
        <ul class="errors">
          {job.recent_errors.map((e) => (
            <li>
              <time>{formatTime(e.at)}</time> {e.message}
              {e.reason ? `: ${e.reason}` : ''}
            </li>
          ))}
        </ul>
      ) : (
        <p>None since the daemon started.</p>
      )}
      <h2>Config</h2>
      <pre class="config">{JSON.stringify(job.config, null, 2)}</pre>
    </div>
  </>
);
