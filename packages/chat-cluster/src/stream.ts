/**
 * The inbound stream's names and settings: which stream, which subject a chat's messages go to, and the
 * message id that lets JetStream drop a message another daemon (or a retried webhook) already stored.
 * Creating or updating the stream is idempotent, so every daemon does it at start.
 */
import { JetStreamApiError, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import type { InboundMessage } from '@agent/channels';
import { ChatClusterError } from './errors.js';

/** Dot-separated tokens of letters, digits, `_` and `-` (as `broker.yaml` `subject_prefix`); at most 64. */
const PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const MAX_PREFIX_LENGTH = 64;
/** Where inbound subjects start (after the prefix); the stream is named after it: `AGENT_INBOUND`. */
const SUBJECT_BASE = 'agent.inbound';
const BASE_STREAM = SUBJECT_BASE.toUpperCase().replaceAll('.', '_');
const NANOS_PER_MS = 1_000_000;

/** The stream's default number of partitions. */
export const DEFAULT_INBOUND_PARTITIONS = 32;
/** How long JetStream remembers a message id to drop the same message published again. */
const DUPLICATE_WINDOW_MS = 2 * 60_000;
/** Default age after which a stored message goes, handled or not. */
export const DEFAULT_STREAM_MAX_AGE_MS = 24 * 60 * 60_000;
/** Default size above which the oldest stored messages go. */
export const DEFAULT_STREAM_MAX_BYTES = 1024 * 1024 * 1024;

/** Where one deployment's inbound messages live on a NATS server it may share with others. */
export interface InboundNames {
  /** The stream, e.g. `AGENT_INBOUND` or `t1_AGENT_INBOUND`. */
  readonly stream: string;
  /** The subject of partition `p`, e.g. `t1.agent.inbound.7`. */
  subject(p: number): string;
  /** Every partition's subject: `<prefix>.agent.inbound.*`. */
  readonly subjects: string;
  /** The durable consumer of partition `p`. */
  consumer(p: number): string;
}

/** 32-bit FNV-1a over the UTF-8 bytes of `text`. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The partition of a chat: `fnv1a(plugin/instance/chatId) mod partitions`. */
export function partitionOf(msg: Pick<InboundMessage, 'plugin' | 'instance' | 'chatId'>, partitions: number) {
  return fnv1a(`${msg.plugin}/${msg.instance}/${msg.chatId}`) % partitions;
}

/** The JetStream message id: the same message published twice within the window is stored once. */
export function inboundMessageId(msg: InboundMessage): string {
  return `${msg.plugin}/${msg.instance}/${msg.chatId}/${msg.messageId}`;
}

/**
 * Names under `subjectPrefix` (`t1` or `t1.`; none when empty). Stream names cannot hold dots: the prefix's
 * dots become `_`, and a prefix that had dots also gets its hash, so that `a.b` and `a_b` stay apart.
 */
export function inboundNames(subjectPrefix = ''): InboundNames {
  const prefix = subjectPrefix.endsWith('.') ? subjectPrefix.slice(0, -1) : subjectPrefix;
  if (subjectPrefix !== '' && (prefix.length > MAX_PREFIX_LENGTH || !PREFIX.test(prefix))) {
    throw new ChatClusterError(
      'CHAT_STREAM_BAD_OPTIONS',
      `subject prefix "${subjectPrefix}": use dot-separated tokens of letters, digits, "_" and "-", at most ${MAX_PREFIX_LENGTH} characters`,
    );
  }
  const head = prefix === '' ? '' : `${prefix}.`;
  const safe = prefix.replaceAll('.', '_');
  const stream =
    prefix === ''
      ? BASE_STREAM
      : safe === prefix
        ? `${safe}_${BASE_STREAM}`
        : `${safe}_${BASE_STREAM}_${fnv1a(prefix).toString(16).padStart(8, '0')}`;
  return {
    stream,
    subject: (p) => `${head}${SUBJECT_BASE}.${p}`,
    subjects: `${head}${SUBJECT_BASE}.*`,
    consumer: (p) => `inbound-${p}`,
  };
}

export interface StreamLimits {
  /** Default `DEFAULT_STREAM_MAX_AGE_MS` (24 h). */
  maxAgeMs?: number;
  /** Default `DEFAULT_STREAM_MAX_BYTES` (1 GiB). */
  maxBytes?: number;
  /** Default 1; 3 on a clustered NATS for the stream to survive a server. */
  replicas?: number;
}

/** The stream's settings: file storage, limits retention (age and size, oldest out), the dedup window. */
export function inboundStreamConfig(names: InboundNames, limits: StreamLimits = {}) {
  return {
    name: names.stream,
    subjects: [names.subjects],
    storage: 'file',
    retention: 'limits',
    discard: 'old',
    max_age: (limits.maxAgeMs ?? DEFAULT_STREAM_MAX_AGE_MS) * NANOS_PER_MS,
    max_bytes: limits.maxBytes ?? DEFAULT_STREAM_MAX_BYTES,
    duplicate_window: DUPLICATE_WINDOW_MS * NANOS_PER_MS,
    num_replicas: limits.replicas ?? 1,
  } satisfies Partial<StreamConfig> & { name: string };
}

/** Creates the stream, or brings an existing one to these settings; safe when daemons start together. */
export async function ensureInboundStream(
  jsm: JetStreamManager,
  names: InboundNames,
  limits?: StreamLimits,
): Promise<void> {
  const config = inboundStreamConfig(names, limits);
  const fail = (err: unknown): ChatClusterError =>
    new ChatClusterError(
      'CHAT_STREAM_CONFLICT',
      `stream ${names.stream} could not be created or updated: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  const update = () =>
    jsm.streams.update(names.stream, config).catch((err: unknown) => Promise.reject(fail(err)));
  try {
    await jsm.streams.info(names.stream);
  } catch (err) {
    if (!(err instanceof JetStreamApiError) || err.code !== STREAM_NOT_FOUND) throw fail(err);
    try {
      await jsm.streams.add(config);
      return;
    } catch (addErr) {
      // Another daemon created it in between: update it like an existing one.
      if (!(addErr instanceof JetStreamApiError) || addErr.code !== STREAM_NAME_IN_USE) throw fail(addErr);
    }
  }
  await update();
}

/** JetStream API error codes. */
const STREAM_NOT_FOUND = 10059;
const STREAM_NAME_IN_USE = 10058;
