/**
 * The console's client script: keeps the admin token of this tab (when the server needs one), navigates
 * without full reloads, refreshes the live parts of the page every 2 s, and runs the actions through the
 * admin JSON API. Without it, every read-only page still works.
 */
const TOKEN_KEY = 'agent-console-token';
const REFRESH_MS = 2000;

const token = (): string | null => sessionStorage.getItem(TOKEN_KEY);

function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const t = token();
  return t ? { ...extra, authorization: `Bearer ${t}` } : extra;
}

function say(text: string, bad = false): void {
  const status = document.getElementById('status');
  if (!status) return;
  status.textContent = text;
  status.className = bad ? 'bad' : 'ok';
}

/** Marks a live refresh: the server may leave out what only a page load computes (the reload preview). */
const LIVE_REFRESH = { 'x-console-refresh': '1' };

async function fetchPage(url: string, live = false): Promise<Document | null> {
  const res = await fetch(url, {
    headers: authHeaders({ accept: 'text/html', ...(live ? LIVE_REFRESH : {}) }),
  });
  if (res.status === 401 && token()) sessionStorage.removeItem(TOKEN_KEY);
  const type = res.headers.get('content-type') ?? '';
  if (!type.startsWith('text/html')) return null;
  return new DOMParser().parseFromString(await res.text(), 'text/html');
}

/** Refreshes started so far: only the latest may land (see `refresh`). */
let refreshes = 0;
let inFlight = false;

/** Shows another page of the console: its body and title replace ours. */
async function navigate(url: string, how: 'push' | 'replace' | 'none'): Promise<void> {
  // A refresh of the page we leave must not land on the next one.
  refreshes++;
  inFlight = false;
  const doc = await fetchPage(url);
  if (!doc) {
    location.assign(url);
    return;
  }
  document.title = doc.title;
  document.body.replaceWith(document.adoptNode(doc.body));
  if (how === 'push') history.pushState(null, '', url);
  if (how === 'replace') history.replaceState(null, '', url);
  if (how === 'push') document.getElementById('main')?.focus();
}

/**
 * Replaces every `[data-live]` part of the page with the server's fresh rendering of it. `all`: the parts
 * that hold the focus too (after an action, which puts the focus back itself).
 */
async function refresh(all = false): Promise<void> {
  // An action or the filter asks anew, and only the latest refresh applies: one asked before shows the state
  // before it (the timer waits for the refresh in flight instead, see the end of this script).
  if (document.hidden || document.getElementById('token-form')) return;
  const mine = ++refreshes;
  inFlight = true;
  const doc = await fetchPage(location.href, true).catch(() => null);
  if (mine === refreshes) inFlight = false;
  if (!doc || mine !== refreshes) return;
  for (const fresh of doc.querySelectorAll<HTMLElement>('[data-live][id]')) {
    const here = document.getElementById(fresh.id);
    // A part that holds the focus is left alone: a keyboard user is in the middle of it.
    if (here && (all || !here.contains(document.activeElement))) here.replaceWith(document.adoptNode(fresh));
  }
}

/** Pause and Resume take each other's place: the focus goes to whichever the job shows now. */
const TWIN: Record<string, string> = { pause: 'resume', resume: 'pause' };

/**
 * After an action the page is rendered anew and the button that was pressed is gone: the focus goes to the
 * new rendering of it (or of its twin), else to the status line, never to the page's start.
 */
function refocus(action: string, job: string): void {
  const button = (name: string | undefined) =>
    name === undefined
      ? null
      : [...document.querySelectorAll<HTMLButtonElement>(`button[data-action="${name}"]`)].find(
          (b) => (b.dataset.job ?? '') === job,
        );
  const target = button(action) ?? button(TWIN[action]) ?? document.getElementById('status');
  target?.focus();
}

async function api(method: string, path: string, body?: unknown): Promise<{ ok: boolean; data: any }> {
  const res = await fetch(path, {
    method,
    headers: authHeaders(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const data = await res.json().catch(() => ({}));
  return { ok: res.ok, data };
}

async function act(button: HTMLButtonElement): Promise<void> {
  const action = button.dataset.action ?? '';
  const job = button.dataset.job ?? '';
  if (
    action === 'reset' &&
    !confirm(
      `Reset "${job}"? Its cursor, seen items and errors are cleared, and the next tick records a new baseline.`,
    )
  )
    return say(`reset of ${job} cancelled`);
  button.disabled = true;
  say(`${action} ${job}…`);
  try {
    const r =
      action === 'apply-reload'
        ? await api('POST', '/admin/pollers/reload')
        : await api(
            'POST',
            `/admin/pollers/${encodeURIComponent(job)}/${action}`,
            action === 'reset' ? { confirm: true } : undefined,
          );
    if (!r.ok) say(`${action} failed: ${r.data?.error?.message ?? 'error'}`, true);
    else if (action === 'apply-reload')
      say(
        `reload applied: v${r.data.version}: add ${r.data.add.length}, replace ${r.data.replace.length}, remove ${r.data.remove.length}, rejected ${r.data.rejected.length}`,
        r.data.rejected.length > 0,
      );
    else if (action === 'run')
      say(
        `run ${job}: ${r.data.status}${r.data.error ? `: ${r.data.error}` : ''}`,
        r.data.status !== 'ok' && r.data.status !== 'skipped',
      );
    else say(`${action} ${job}: done`);
  } finally {
    button.disabled = false;
  }
  const answer = document.getElementById('status');
  const [text, bad] = [answer?.textContent ?? '', answer?.className === 'bad'];
  await (action === 'apply-reload' ? navigate(location.href, 'none') : refresh(true));
  // A new page brings an empty status line: the answer is said again there.
  if (text && document.getElementById('status')?.textContent === '') say(text, bad);
  refocus(action, job);
}

const ownPage = (url: URL): boolean =>
  url.origin === location.origin &&
  !url.pathname.startsWith('/admin/') &&
  !url.pathname.startsWith('/console/');

document.addEventListener('click', (e) => {
  const target = e.target as Element | null;
  const button = target?.closest<HTMLButtonElement>('button[data-action]');
  if (button) {
    e.preventDefault();
    void act(button);
    return;
  }
  const link = target?.closest<HTMLAnchorElement>('a[href]');
  if (!link || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey)
    return;
  const url = new URL(link.href);
  if (!ownPage(url) || url.hash) return;
  e.preventDefault();
  void navigate(url.href, 'push');
});

let typing: ReturnType<typeof setTimeout> | undefined;
document.addEventListener('input', (e) => {
  const input = e.target as HTMLInputElement;
  if (input.id !== 'q' || !input.form) return;
  clearTimeout(typing);
  // Filtering as one types; the URL keeps the filter, so a refresh or a bookmark shows the same rows.
  typing = setTimeout(() => {
    const url = new URL(input.form!.action);
    url.search = new URLSearchParams(
      new FormData(input.form!) as unknown as Record<string, string>,
    ).toString();
    history.replaceState(null, '', url.href);
    void refresh();
  }, 200);
});

document.addEventListener('submit', (e) => {
  const form = e.target as HTMLFormElement;
  e.preventDefault();
  if (form.id === 'token-form') {
    const value = (form.querySelector<HTMLInputElement>('#token')?.value ?? '').trim();
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    void navigate(location.href, 'none');
    return;
  }
  const url = new URL(form.action);
  url.search = new URLSearchParams(new FormData(form) as unknown as Record<string, string>).toString();
  void navigate(url.href, 'push');
});

window.addEventListener('popstate', () => void navigate(location.href, 'none'));

// A page answered without the token (401) asks for it; with one kept in this tab, it loads at once.
if (document.getElementById('token-form') && token()) void navigate(location.href, 'none');

// A slow answer is not asked again and again: the timer waits for the refresh in flight.
setInterval(() => {
  if (!inFlight) void refresh();
}, REFRESH_MS);
document.documentElement.dataset.console = 'ready';
