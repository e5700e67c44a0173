/** `docs/admin-api.md`, generated from the route table and the error table. */
import { ADMIN_ERROR_CODES } from './errors.js';
import { ADMIN_ROUTES } from './routes.js';
import { MAX_BODY_BYTES } from './security.js';

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function renderAdminApiDocs(): string {
  const out: string[] = [];
  const p = (...lines: string[]) => out.push(...lines);
  p(
    '# Admin HTTP API',
    '',
    '<!-- Generated from packages/admin-api/src/routes.ts and errors.ts by renderAdminApiDocs(); do not edit by hand. -->',
    '',
    'The daemon serves this API on a loopback address only: `runtime.yaml` `admin.listen`, default',
    '`127.0.0.1:9091`. `agent pollers ...` is its client (see [cli.md](cli.md)); `curl` works too:',
    '',
    '```sh',
    'curl -s http://127.0.0.1:9091/admin/pollers',
    "curl -s -X POST -H 'content-type: application/json' -d '{\"confirm\": true}' \\",
    '  http://127.0.0.1:9091/admin/pollers/<id>/reset',
    '```',
    '',
    'Every answer is JSON (`Content-Type: application/json`, `Cache-Control: no-store`). Secret values never',
    'appear in an answer: a job `config` has every value under a key named like a secret (`token`, `password`,',
    '`api_key`, `secret`, ...) and every `headers` value replaced by `[redacted]`, and every string of every',
    'answer passes through the snapshot redactor, which hides each value read from `${file:}` or `${ENV}`.',
    '',
    '## Endpoints',
    '',
    '| Method | Path | Purpose | Request body | Responses |',
    '| --- | --- | --- | --- | --- |',
  );
  for (const r of ADMIN_ROUTES)
    p(
      `| ${r.method} | \`${r.path.replace(/:id/g, '<id>')}\` | ${cell(r.purpose)} | ${cell(r.request)} | ${r.responses
        .map((x) => `**${x.status}** ${cell(x.body)}`)
        .join('<br>')} |`,
    );
  p(
    '',
    'Every `/admin/pollers*` path answers 404 `ADMIN_NOT_FOUND` while the poller subsystem is off',
    '(`pollers.yaml` absent, or `enabled: false`); `/admin/credentials/reload` and `/admin/info` always exist. A job id that is',
    'also an action name is still reachable: `GET /admin/pollers/reload` shows a job named `reload`.',
    'A `GET` endpoint also answers `HEAD`.',
    '',
    '## Errors',
    '',
    'Every error has one shape:',
    '',
    '```json',
    '{ "error": { "code": "ADMIN_UNKNOWN_JOB", "message": "no poller job \\"x\\"; list the jobs with agent pollers list" } }',
    '```',
    '',
    'A 500 says only `internal error; see the daemon log`; the reason is logged (`admin request failed`),',
    'never sent.',
    '',
    '| Status | Code | Meaning | What to do |',
    '| --- | --- | --- | --- |',
  );
  for (const [code, e] of Object.entries(ADMIN_ERROR_CODES))
    p(`| ${e.status === 0 ? 'at start' : e.status} | \`${code}\` | ${cell(e.meaning)} | ${cell(e.action)} |`);
  p(
    '',
    '## Request rules',
    '',
    'Checked in this order before any endpoint runs, so a refused request never changes anything:',
    '',
    '1. `Host` must be present and be `127.0.0.1`, `localhost` or `[::1]`, with an optional port (403',
    '   `ADMIN_HOST_NOT_LOOPBACK`). This defeats DNS rebinding: a page whose name resolves to 127.0.0.1 still',
    '   sends its own name. A request without `Host` (HTTP/1.0) names nothing and is refused.',
    '2. A browser’s cross-site marks are refused (403 `ADMIN_CROSS_SITE`): an `Origin` other than the server’s',
    '   own, `Origin: null`, or `Sec-Fetch-Site: cross-site` / `same-site`. The own origin is exactly',
    '   `http://<Host>` on the port the request came in on: the server speaks plain HTTP, so `https://…` is',
    '   another origin, and so is another port. The CLI and curl send none of these headers.',
    '3. With `admin.token_file` set, every request needs `Authorization: Bearer <token>` (401',
    '   `ADMIN_UNAUTHORIZED`, with `WWW-Authenticate: Bearer`); the comparison takes constant time.',
    '4. A `POST` carries no body, or JSON with `Content-Type: application/json` (403 `ADMIN_CONTENT_TYPE`). Any',
    '   other `Content-Type` is refused even with an empty body: an HTML form can only send form or text types,',
    '   and JSON makes a browser ask first (CORS preflight), which this server never grants.',
    `5. A body is at most ${MAX_BODY_BYTES / 1024} KiB (413 \`ADMIN_BODY_TOO_LARGE\`) and must be a JSON object (400 \`ADMIN_BAD_REQUEST\`).`,
    '',
    'The server itself refuses to listen on anything but `127.0.0.1`, `localhost` or `::1`',
    '(`ADMIN_NOT_LOOPBACK` at start).',
    '',
    'The metrics listener (`runtime.yaml` `metrics.listen`: `/metrics`, `/healthz`, `/readyz`) applies rule 1',
    'too, with one addition: `Host` may also be the listener’s own address (the address the request came in',
    'on, or the host of `metrics.listen`). Any other `Host`, or none, gets 403',
    '`{"error": {"code": "HOST_NOT_ALLOWED", …}}`: a DNS-rebinding page cannot read job and agent ids from',
    'the metrics. A scraper on another machine addresses the listener by its IP address.',
    '',
    '## Versioning',
    '',
    'Paths carry no version. Fields are only ever added to answers; a client must ignore fields it does not',
    'know. Removing or renaming a field or an error code is a breaking change of the daemon’s major version.',
    '',
  );
  return out.join('\n');
}
