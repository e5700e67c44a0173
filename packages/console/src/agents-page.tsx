/** @jsxImportSource hono/jsx */
/** Agents: the version each runs on, model, bindings with allowed tools and outbound allowlists. */
import type { AdminAgentList } from '@agent/admin-api';
import type { FC } from 'hono/jsx';

export const AgentsPage: FC<{ list: AdminAgentList }> = ({ list }) => (
  <div id="agents" data-live>
    {list.agents.map((a) => (
      <section class="agent" aria-labelledby={`agent-${a.id}`}>
        <h2 id={`agent-${a.id}`}>
          {a.id} <span class="tag">v{a.version}</span>
        </h2>
        <p>
          model {a.model.provider}/{a.model.name}
        </p>
        <div class="scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Channel</th>
                <th scope="col">Allowed tools</th>
                <th scope="col">Outbound allowlist</th>
              </tr>
            </thead>
            <tbody>
              {a.bindings.map((b) => (
                <tr>
                  <td>
                    {b.plugin}/{b.instance}
                  </td>
                  <td>{b.allowed_tools.length ? b.allowed_tools.join(', ') : 'none'}</td>
                  <td>
                    {Object.entries(b.outbound_allowlist)
                      .map(([ch, to]) => `${ch}: ${to.join(', ')}`)
                      .join('; ') || 'none'}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    ))}
    {list.invalid.length > 0 ? (
      <section aria-label="Invalid agents">
        <h2>Agent files that run no definition</h2>
        <ul>
          {list.invalid.map((x) => (
            <li>
              <strong>{x.id}</strong>: {x.reason}
            </li>
          ))}
        </ul>
      </section>
    ) : null}
  </div>
);
