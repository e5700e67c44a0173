/** @jsxImportSource hono/jsx */
/** Reload: the preview of the files as they are now, an apply button, and the applied versions. */
import type { AdminReloads, ReloadPlanJson } from '@agent/admin-api';
import type { FC } from 'hono/jsx';
import { formatTime } from './format.js';

const Ids: FC<{ label: string; mark: string; ids: string[] }> = ({ label, mark, ids }) =>
  ids.length ? (
    <li>
      {label}: {ids.map((id) => `${mark}${id}`).join(', ')}
    </li>
  ) : null;

const Preview: FC<{ plan: ReloadPlanJson }> = ({ plan }) => (
  <div id="preview" data-plan={JSON.stringify({ add: plan.add, replace: plan.replace, remove: plan.remove })}>
    <p>
      Would run <strong>v{plan.version ?? '?'}</strong>: add {plan.add.length}, replace {plan.replace.length},
      remove {plan.remove.length}, keep {plan.keep.length}, rejected{' '}
      {plan.rejected.length + (plan.errors?.length ?? 0)}.
    </p>
    <ul class="plan">
      <Ids label="Jobs added" mark="+ " ids={plan.add} />
      <Ids label="Jobs replaced" mark="~ " ids={plan.replace} />
      <Ids label="Jobs removed" mark="- " ids={plan.remove} />
      <Ids label="Agents applied" mark="" ids={plan.agents?.applied ?? []} />
      {plan.rejected.map((r) => (
        <li class="bad" data-rejected-job={r.id}>
          job {r.id} rejected: {r.errors.join('; ')}
        </li>
      ))}
      {(plan.agents?.rejected ?? []).map((r) => (
        <li class="bad" data-rejected-agent={r.agent_id}>
          agent {r.agent_id} rejected: {r.reason}
        </li>
      ))}
      {(plan.errors ?? []).map((e) => (
        <li class="bad">{e}</li>
      ))}
      {(plan.agents?.restart_required ?? []).map((r) => (
        <li class="warn" data-restart={r.agent_id ?? ''}>
          restart required: {r.agent_id ? `${r.agent_id} ` : ''}
          {r.field}
          {r.file === undefined ? '' : ` (${r.file}${r.line === undefined ? '' : `:${r.line}`})`}
          {r.reason ? `: ${r.reason}` : ''}
        </li>
      ))}
    </ul>
  </div>
);

export const ReloadPage: FC<{
  plan: ReloadPlanJson | null;
  problem: string | null;
  reloads: AdminReloads | null;
}> = (props) => (
  <>
    <section aria-labelledby="preview-h">
      <h2 id="preview-h">Preview of the files now</h2>
      {props.plan ? (
        <Preview plan={props.plan} />
      ) : props.problem ? (
        <p class="bad">{props.problem}</p>
      ) : (
        <p>Not previewed: choose Preview again.</p>
      )}
      <div class="actions">
        <a class="button" href="/reload">
          Preview again
        </a>
        <button type="button" data-action="apply-reload">
          Apply reload
        </button>
      </div>
    </section>
    <section aria-labelledby="history-h" id="history" data-live>
      <h2 id="history-h">Applied versions</h2>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Time</th>
              <th scope="col">Triggered by</th>
              <th scope="col">Agents applied</th>
              <th scope="col">Rejected</th>
            </tr>
          </thead>
          <tbody>
            {(props.reloads?.history ?? []).map((r) => (
              <tr>
                <td>v{r.version}</td>
                <td>{formatTime(r.at)}</td>
                <td>{r.triggers.join(', ')}</td>
                <td class="num">{r.applied}</td>
                <td class="num">{r.rejected}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  </>
);
