/**
 * The config version a message was accepted under travels with it as a header. A daemon that runs an older
 * version does not run its turn until it has caught up: it would answer with what the newer version
 * replaced (a rotated bot token, a changed prompt), as a daemon never claims a poller job of a newer version.
 * The wait is bounded, so that a daemon that cannot apply the newer version still answers: a rollout reaches
 * every daemon within a heartbeat or two.
 */
import { headers, type MsgHdrs } from '@nats-io/transport-node';

export const CONFIG_VERSION_HEADER = 'Agent-Config-Version';

/** The headers that stamp a message with `version`. */
export function versionHeaders(version: number): MsgHdrs {
  const h = headers();
  h.set(CONFIG_VERSION_HEADER, String(version));
  return h;
}

/** The version a message was accepted under; 0 when it carries none (published by an older daemon). */
export function acceptedVersion(h: MsgHdrs | undefined): number {
  const v = Number(h?.get(CONFIG_VERSION_HEADER) ?? '');
  return Number.isSafeInteger(v) && v > 0 ? v : 0;
}

/**
 * What a daemon running `running` does with a message accepted under `accepted` that has waited `waitedMs`
 * of at most `maxWaitMs`: run it, wait for the newer config, or run it anyway once the wait is over.
 */
export type ConfigWait = 'run' | 'wait' | 'run-behind';

export function configWait(
  accepted: number,
  running: number,
  waitedMs: number,
  maxWaitMs: number,
): ConfigWait {
  if (accepted <= running) return 'run';
  return waitedMs < maxWaitMs ? 'wait' : 'run-behind';
}
