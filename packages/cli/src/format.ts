/** Plain-text rendering of admin API answers. Pure functions: tested with snapshots. */
import type {
  AdminJobDetail,
  AdminJobSummary,
  AdminRejectedJob,
  AdminRunResult,
  ReloadPlanJson,
  RestartRequiredJson,
} from '@agent/admin-api';
import { paint } from './io.js';

/** `2026-01-01T00:01:00.000Z` -> `2026-01-01 00:01:00Z`; `-` for none. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z$/.exec(iso);
  return m ? `${m[1]} ${m[2]}Z` : iso;
}

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');
const visibleLength = (s: string): number => s.replace(ANSI, '').length;

/** Columns padded to the widest cell; the last column is not padded. */
export function alignTable(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows)
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, visibleLength(cell));
    });
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell + ' '.repeat(widths[i]! - visibleLength(cell))))
      .join('  ')
      .trimEnd(),
  );
}

const LIST_HEADER = [
  'ID',
  'KIND',
  'AGENT',
  'SCHEDULE',
  'PAUSED',
  'BREAKER',
  'LAST RUN',
  'NEXT RUN',
  'LAST STATUS',
  'ERRORS',
];

function statusCell(status: string | null, color: boolean): string {
  if (!status) return '-';
  if (status === 'ok') return paint.green(status, color);
  if (status === 'skipped') return status;
  return paint.red(status, color);
}

function breakerCell(breaker: string, color: boolean): string {
  if (breaker === 'open') return paint.red(breaker, color);
  if (breaker === 'half-open') return paint.yellow(breaker, color);
  return breaker;
}

/** The daemon in a cluster lease holder id (`<daemon_id>#<incarnation>`); `-` while no daemon holds the job. */
function holderCell(holder: string | null | undefined): string {
  if (!holder) return '-';
  const hash = holder.indexOf('#');
  return hash > 0 ? holder.slice(0, hash) : holder;
}

/**
 * The `agent pollers list` table; a job running a stale definition is marked, and every rejected job of
 * pollers.yaml follows the table with its reason. A cluster daemon's answer (its jobs carry `holder`) adds a
 * `HOLDER` column: the daemon ticking the job now.
 */
export function formatJobTable(
  jobs: readonly AdminJobSummary[],
  color = false,
  rejected: readonly AdminRejectedJob[] = [],
): string[] {
  const notes = rejected.map(
    (r) =>
      `${paint.red('✗', color)} ${r.id}: ${r.running ? 'runs its previous definition; pollers.yaml entry rejected' : 'rejected, not running'}: ${r.errors[0] ?? 'invalid'}${r.errors.length > 1 ? ` (+${r.errors.length - 1} more: agent pollers reload lists them)` : ''}`,
  );
  if (jobs.length === 0) return ['no poller jobs are loaded', ...notes];
  const cluster = jobs.some((j) => j.holder !== undefined);
  const rows = jobs.map((j) => [
    j.definition === 'stale' ? `${j.id} ${paint.red('(stale)', color)}` : j.id,
    j.kind,
    j.agent,
    j.schedule,
    j.paused ? paint.yellow('yes', color) : 'no',
    breakerCell(j.breaker, color),
    formatTime(j.last_run_at),
    formatTime(j.next_run_at),
    statusCell(j.last_status, color),
    String(j.consecutive_errors),
    ...(cluster ? [holderCell(j.holder)] : []),
  ]);
  const header = cluster ? [...LIST_HEADER, 'HOLDER'] : LIST_HEADER;
  return [...alignTable([header, ...rows]), ...(notes.length ? ['', ...notes] : [])];
}

const PLAIN = /^[A-Za-z0-9_@./+:-][A-Za-z0-9 _@./+:-]*$/;

function scalar(v: unknown): string {
  if (typeof v === 'string')
    return PLAIN.test(v) &&
      !/^(true|false|null|yes|no|~|-?\d)/i.test(v) &&
      !v.endsWith(' ') &&
      !v.endsWith(':') &&
      !v.includes(': ')
      ? v
      : JSON.stringify(v);
  if (v === null || v === undefined) return 'null';
  return String(v);
}

/** A JSON value as indented YAML-like lines (for reading, not for parsing back). */
export function formatValue(value: unknown, indent = ''): string[] {
  if (Array.isArray(value)) {
    if (value.length === 0) return [`${indent}[]`];
    return value.flatMap((v) => {
      if (v !== null && typeof v === 'object') {
        const inner = formatValue(v, `${indent}  `);
        return [`${indent}- ${inner[0]!.trimStart()}`, ...inner.slice(1)];
      }
      return [`${indent}- ${scalar(v)}`];
    });
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    if (entries.length === 0) return [`${indent}{}`];
    return entries.flatMap(([k, v]) => {
      const key = PLAIN.test(k) ? k : JSON.stringify(k);
      if (
        v !== null &&
        typeof v === 'object' &&
        (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0)
      )
        return [`${indent}${key}:`, ...formatValue(v, `${indent}  `)];
      return [
        `${indent}${key}: ${Array.isArray(v) ? '[]' : v !== null && typeof v === 'object' ? '{}' : scalar(v)}`,
      ];
    });
  }
  return [`${indent}${scalar(value)}`];
}

const dest = (d: { channel: string; to: string } | null | undefined): string =>
  d ? `${d.channel} -> ${d.to}` : '-';

/** The `agent pollers show` text. */
export function formatJobDetail(j: AdminJobDetail, color = false): string[] {
  const cursor = j.cursor ? (j.cursor.present ? `${j.cursor.bytes} bytes` : 'none') : '-';
  // A lease without a holder is released: its expiry is history, not a hold, so it is not printed.
  const lease = !j.lease
    ? 'none'
    : j.lease.holder
      ? `${j.lease.holder} (epoch ${j.lease.epoch}, expires ${formatTime(j.lease.expires_at)})`
      : `none (last epoch ${j.lease.epoch})`;
  const rows: [string, string][] = [
    ['id', j.id],
    ['kind', j.kind],
    ['agent', j.agent],
    ['schedule', j.schedule],
    ['paused', j.paused ? paint.yellow('yes', color) : 'no'],
    ...(j.definition === 'stale'
      ? ([['definition', paint.red(`stale: ${j.definition_error ?? 'rejected'}`, color)]] as [
          string,
          string,
        ][])
      : []),
    ['breaker', `${breakerCell(j.breaker, color)} (${j.consecutive_errors} consecutive errors)`],
    ['last run', `${formatTime(j.last_run_at)} (${statusCell(j.last_status, color)})`],
    ['last error', j.last_error ?? '-'],
    ['next run', formatTime(j.next_run_at)],
    ['deliver', dest(j.deliver)],
    ['failure to', dest(j.failure_to)],
    ['cursor', `${cursor}; ${j.seen_ids ?? 0} seen ids; baselined ${j.baselined ? 'yes' : 'no'}`],
    ['last alert', formatTime(j.last_failure_alert_at)],
    ['lease holder', lease],
  ];
  const width = Math.max(...rows.map(([k]) => k.length)) + 1;
  return [
    ...rows.map(([k, v]) => `${`${k}:`.padEnd(width)} ${v}`),
    'config:',
    ...formatValue(j.config, '  '),
  ];
}

/** `agent pollers run`: status and item counts. */
export function formatRunResult(id: string, r: AdminRunResult, color = false): string[] {
  const lines = [
    `run ${id}: ${statusCell(r.status, color)}, ${r.items_seen} new item(s) seen, ${r.items_dispatched} delivered`,
  ];
  if (r.error) lines.push(`  error: ${r.error}`);
  return lines;
}

/** `support workspace (config/agents.d/support.yaml:7): the agent keeps …`: what, where, why. */
export function formatRestartRequired(r: RestartRequiredJson): string {
  const where = r.file === undefined ? '' : ` (${r.file}${r.line === undefined ? '' : `:${r.line}`})`;
  return `${r.agent_id ? `${r.agent_id} ` : ''}${r.field}${where}${r.reason ? `: ${r.reason}` : ''}`;
}

/**
 * `agent pollers reload`: counts, then one line per added, replaced, removed and rejected job, then what the
 * reload made (or would make) of the agents: applied (✓), rejected (✗), restart required (!).
 */
export function formatReloadPlan(plan: ReloadPlanJson, color = false): string[] {
  const lines = [
    `pollers reload${plan.dry_run ? ' preview (nothing applied)' : ''}: add=${plan.add.length} replace=${plan.replace.length} remove=${plan.remove.length} keep=${plan.keep.length} rejected=${plan.rejected.length + (plan.errors ?? []).length}`,
  ];
  for (const id of plan.add) lines.push(`  ${paint.green('+', color)} ${id}`);
  for (const id of plan.replace) lines.push(`  ${paint.yellow('~', color)} ${id}`);
  for (const id of plan.remove) lines.push(`  ${paint.red('-', color)} ${id}`);
  for (const r of plan.rejected) {
    const [first, ...more] = r.errors.length ? r.errors : ['invalid'];
    const running = plan.keep.includes(r.id) ? ' (its previous definition keeps running)' : '';
    lines.push(`  ${paint.red('✗', color)} ${r.id}: ${first}${more.length ? '' : running}`);
    for (const [i, e] of more.entries()) lines.push(`      ${e}${i === more.length - 1 ? running : ''}`);
  }
  for (const e of plan.errors ?? []) lines.push(`  ${paint.red('✗', color)} ${e}`);
  const agents = plan.agents;
  if (!agents) return lines;
  for (const id of agents.applied) lines.push(`  ${paint.green('✓', color)} agent ${id}`);
  for (const r of agents.rejected) lines.push(`  ${paint.red('✗', color)} agent ${r.agent_id}: ${r.reason}`);
  for (const r of agents.restart_required)
    lines.push(`  ${paint.yellow('!', color)} restart required: ${formatRestartRequired(r)}`);
  return lines;
}
