/**
 * `cluster.yaml`, owned here: the section reader the daemon registers with the config loader, and the check
 * that cluster mode runs over NATS. The file is host-local and restart-required; absent, the daemon runs in
 * single-host mode exactly as before.
 */
import { hostname } from 'node:os';
import {
  issueAt,
  validateAt,
  type ConfigIssue,
  type SectionContext,
  type SectionReader,
  type SectionResult,
} from '@agent/config-snapshot';
import { clusterFileSchema, type ClusterFile } from './schema.js';

export const CLUSTER_SECTION = 'cluster';
export const CLUSTER_FILE = 'cluster.yaml';

/** `cluster.yaml` as the daemon uses it: defaults filled in, `${file:}` resolved, times in ms. */
export interface ClusterSettings {
  /** The file as shown in messages. */
  readonly file: string;
  readonly enabled: boolean;
  readonly daemonId: string;
  readonly postgres: { readonly url: string; readonly schema: string; readonly poolMax: number };
  readonly claim: { readonly maxConcurrentTicks: number; readonly pollMaxMs: number };
  readonly heartbeat: { readonly intervalMs: number; readonly staleAfterMs: number };
  readonly chat: { readonly partitions: number; readonly ownerTtlMs: number; readonly ackWaitMs: number };
  /** Where `enabled` (or the document) is, for issues that point into the file. */
  readonly position?: { line: number; column: number };
}

/** The section reader of `cluster.yaml` for `loadConfig`'s `sections`; `host` defaults `daemon_id`. */
export function clusterSectionReader(options: { host?: string } = {}): SectionReader<ClusterSettings> {
  return {
    name: CLUSTER_SECTION,
    files: [CLUSTER_FILE],
    read: (ctx) => readClusterSection(ctx, options.host ?? hostname()),
  };
}

/** The cluster settings of a snapshot, `null` when `cluster.yaml` is absent or says `enabled: false`. */
export function clusterOf(snapshot: {
  readonly sections: ReadonlyMap<string, unknown>;
}): ClusterSettings | null {
  const settings = snapshot.sections.get(CLUSTER_SECTION) as ClusterSettings | null | undefined;
  return settings?.enabled ? settings : null;
}

function readClusterSection(ctx: SectionContext, host: string): SectionResult<ClusterSettings> {
  if (ctx.unreadable.has(CLUSTER_FILE)) return { value: null, issues: [], keepPrevious: true };
  const src = ctx.files.get(CLUSTER_FILE);
  if (!src) return { value: null, issues: [], keepPrevious: false };
  const base = { scope: 'section' as const, section: CLUSTER_SECTION };
  const issues: ConfigIssue[] = [];
  const value = ctx.resolveRefs(src, src.value ?? {}, [], base, issues);
  const doc = (value === null ? {} : value) as ClusterFile;
  if (issues.length === 0) issues.push(...validateAt(clusterFileSchema, doc, src, [], base));
  if (issues.length > 0) return { value: null, issues, keepPrevious: true };
  const heartbeat = {
    interval_secs: doc.heartbeat?.interval_secs ?? 5,
    stale_after_secs: doc.heartbeat?.stale_after_secs ?? 15,
  };
  if (heartbeat.stale_after_secs < 3 * heartbeat.interval_secs) {
    const where =
      doc.heartbeat?.stale_after_secs === undefined ? ['heartbeat'] : ['heartbeat', 'stale_after_secs'];
    issues.push(
      issueAt(src, where, {
        ...base,
        code: 'CLUSTER_BAD_WINDOW',
        message: `stale_after_secs ${heartbeat.stale_after_secs} is shorter than 3 heartbeats of ${heartbeat.interval_secs} s`,
        hint: `set stale_after_secs to at least ${3 * heartbeat.interval_secs}, or lower interval_secs`,
      }),
    );
    return { value: null, issues, keepPrevious: true };
  }
  const position = src.locate([], 'enabled') ?? src.locate([]);
  const settings: ClusterSettings = {
    file: src.display,
    enabled: doc.enabled ?? true,
    daemonId: doc.daemon_id ?? host,
    postgres: {
      url: doc.postgres.url,
      schema: doc.postgres.schema ?? 'agent',
      poolMax: doc.postgres.pool_max ?? 10,
    },
    claim: {
      maxConcurrentTicks: doc.claim?.max_concurrent_ticks ?? 64,
      pollMaxMs: doc.claim?.poll_max_ms ?? 1000,
    },
    heartbeat: {
      intervalMs: heartbeat.interval_secs * 1000,
      staleAfterMs: heartbeat.stale_after_secs * 1000,
    },
    chat: {
      partitions: doc.chat?.partitions ?? 32,
      ownerTtlMs: (doc.chat?.owner_ttl_secs ?? 15) * 1000,
      ackWaitMs: (doc.chat?.ack_wait_secs ?? 30) * 1000,
    },
    ...(position ? { position } : {}),
  };
  return { value: settings, issues, keepPrevious: false };
}

/**
 * Cluster mode needs the NATS broker: the local one reaches one daemon. Call it after every read with the
 * snapshot's broker settings and the path of `broker.yaml` as shown in messages.
 */
export function clusterBrokerIssues(
  cluster: ClusterSettings | null,
  broker: { readonly kind?: string },
  brokerFile: string,
): ConfigIssue[] {
  if (!cluster || broker.kind === 'nats') return [];
  return [
    {
      code: 'CLUSTER_NEEDS_NATS',
      severity: 'error',
      scope: 'section',
      section: CLUSTER_SECTION,
      file: cluster.file,
      path: 'enabled',
      ...cluster.position,
      message: `cluster mode is enabled here but ${brokerFile} has kind "${broker.kind ?? 'local'}"; cluster mode needs NATS`,
      hint: `set kind: nats and url: nats://<host>:<port> in ${brokerFile}, or enabled: false in ${cluster.file}`,
    },
  ];
}

/** Whether a reload changed `cluster.yaml` (restart required: the running daemon keeps `prev`). */
export function clusterSettingsChanged(prev: ClusterSettings | null, next: ClusterSettings | null): boolean {
  const strip = (s: ClusterSettings | null) => (s ? { ...s, position: undefined } : null);
  return JSON.stringify(strip(prev)) !== JSON.stringify(strip(next));
}
