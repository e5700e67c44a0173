/** @jsxImportSource hono/jsx */
/** The page shell: skip link, navigation, health strip, main, and the one client script (a module file). */
import type { AdminInfo, AdminReloads } from '@agent/admin-api';
import type { Child, FC } from 'hono/jsx';
import { formatDuration } from './format.js';

export interface Health {
  info: AdminInfo | null;
  reloads: AdminReloads | null;
  now: number;
}

const NAV = [
  ['/', 'Jobs'],
  ['/agents', 'Agents'],
  ['/reload', 'Reload'],
] as const;

const HealthStrip: FC<{ health: Health }> = ({ health }) => {
  const { info, reloads } = health;
  return (
    <section class="health" id="health" data-live aria-label="Daemon health">
      <span>
        daemon <strong>{info?.version ?? '?'}</strong>
      </span>
      <span>up {info ? formatDuration(health.now - Date.parse(info.started_at)) : '?'}</span>
      <span>
        config <strong>v{reloads?.version ?? '?'}</strong>
      </span>
      <span class={reloads?.last_reload_successful === false ? 'bad' : 'ok'}>
        last reload: {reloads ? (reloads.last_reload_successful ? 'ok' : 'rejected something') : '?'}
      </span>
      {info?.metrics_url ? <a href={info.metrics_url}>metrics</a> : <span>metrics off</span>}
    </section>
  );
};

export const Layout: FC<{ title: string; path: string; health: Health | null; children?: Child }> = (
  props,
) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{`${props.title} · agent console`}</title>
      <link rel="stylesheet" href="/console/style.css" />
      <script type="module" src="/console/app.js"></script>
    </head>
    <body>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <nav aria-label="Console">
          <span class="brand">agent</span>
          {NAV.map(([href, label]) => (
            <a href={href} aria-current={props.path === href ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        {props.health ? <HealthStrip health={props.health} /> : null}
      </header>
      <main id="main" tabindex={-1}>
        <h1>{props.title}</h1>
        <p id="status" role="status" aria-live="polite" tabindex={-1}></p>
        {props.children}
      </main>
    </body>
  </html>
);

/** What a page shows when the API refused or failed: its own message, as it came. */
export const ApiProblem: FC<{ message: string }> = ({ message }) => <p class="bad">{message}</p>;
