import { sleep } from '@agent/timers';
import type * as Undici from 'undici';
import type { ChannelDeps } from './contract.js';
import { ChannelError } from './errors.js';

let undici: Promise<typeof Undici> | undefined;

/**
 * undici's `request`, loaded by the first call to a vendor: a daemon whose channels never call one (the `log`
 * channel) never loads undici.
 */
export const vendorRequest: typeof Undici.request = async (...args) =>
  (await (undici ??= import('undici'))).request(...args);

/** Vendor answers larger than this are cut off and treated as a failure. */
export const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

export function depsClock(deps: ChannelDeps): {
  now: () => Date;
  sleep: (ms: number, signal?: AbortSignal) => Promise<unknown>;
} {
  return { now: deps.now ?? (() => new Date()), sleep: deps.sleep ?? sleep };
}

/** Reads a response body as text, giving up past `cap` bytes. */
export async function readCapped(body: AsyncIterable<Buffer | Uint8Array>, cap: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > cap) throw new Error(`response body larger than ${cap} bytes`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Replaces every occurrence of each secret in `text`. */
export function redact(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('[redacted]');
  return out;
}

/** Short description of a network-level failure (no URL: URLs may carry secrets). */
export function describeNetworkError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  const code = (err as { code?: unknown }).code ?? (cause as { code?: unknown } | undefined)?.code;
  const base = err.message;
  return typeof code === 'string' && !base.includes(code) ? `${base} (${code})` : base;
}

export function requireString(plugin: string, config: Record<string, unknown>, field: string): string {
  const value = config[field];
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ChannelError(
      'CHANNEL_CONFIG_INVALID',
      `${plugin}: instance field \`${field}\` is required and must be a non-empty string`,
    );
  }
  return value;
}

export function optionalString(
  plugin: string,
  config: Record<string, unknown>,
  field: string,
  fallback: string,
): string {
  const value = config[field];
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ChannelError(
      'CHANNEL_CONFIG_INVALID',
      `${plugin}: instance field \`${field}\` must be a non-empty string`,
    );
  }
  return value;
}

export function checkConfigObject(
  plugin: string,
  config: unknown,
  known: readonly string[],
): Record<string, unknown> {
  if (!isRecord(config)) {
    throw new ChannelError('CHANNEL_CONFIG_INVALID', `${plugin}: an instance block must be a mapping`);
  }
  for (const key of Object.keys(config)) {
    if (!known.includes(key)) {
      throw new ChannelError(
        'CHANNEL_CONFIG_INVALID',
        `${plugin}: unknown instance field \`${key}\`; known fields are ${known.join(', ')}`,
      );
    }
  }
  return config;
}

export function checkOutbound(plugin: string, msg: { to: string; text: string }): void {
  if (typeof msg.to !== 'string' || msg.to.trim() === '') {
    throw new ChannelError('CHANNEL_MESSAGE_INVALID', `${plugin}: a message needs a non-empty \`to\``);
  }
  if (typeof msg.text !== 'string' || msg.text.trim() === '') {
    throw new ChannelError('CHANNEL_MESSAGE_INVALID', `${plugin}: a message needs a non-empty \`text\``);
  }
}

export function stripTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
