/**
 * The operator console: pages of the admin server, rendered on the server from the admin API's own JSON
 * answers, plus one client script for live updates and actions, which call the same JSON API. The pages
 * (JSX, styles, client script) are loaded by the first page request: a daemon whose console nobody opens
 * does not carry them.
 */
import type { AdminPages } from '@agent/admin-api';

export interface ConsoleOptions {
  /** Asks the admin API in-process (`adminApp.request`). */
  api(path: string, init: RequestInit): Promise<Response>;
  now?: () => number;
}

/** The GET routes of the pages (pages.tsx registers the same): only these reach the console. */
const CONSOLE_ROUTES = ['/', '/jobs/:id', '/agents', '/reload', '/console/:name'] as const;

export function createConsole(options: ConsoleOptions): AdminPages {
  let pages: Promise<ReturnType<typeof import('./pages.js').consolePages>> | undefined;
  const loaded = () => (pages ??= import('./pages.js').then((m) => m.consolePages(options)));
  return {
    routes: CONSOLE_ROUTES,
    fetch: async (request, env) => (await loaded()).app.fetch(request, env),
    isPublic: (path) => path.startsWith('/console/'),
    unauthorized: async () => (await loaded()).unauthorized(),
  };
}
