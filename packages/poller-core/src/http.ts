/** The HTTP client a kind gets: the runtime's guarded client, bound to the tick's signal and the job's opt-in. */
import type { GuardedHttp, GuardedRequestOptions } from '@agent/guarded-http';
import type { PollerHttp } from './kind.js';

/** Wraps the guarded client: the tick signal and the job's `allow_private_networks` are applied. */
export function pollerHttp(
  base: GuardedHttp,
  signal: AbortSignal | undefined,
  allowPrivateNetworks: boolean,
): PollerHttp {
  return {
    request(url, options: GuardedRequestOptions = {}) {
      const signals = [signal, options.signal].filter((s): s is AbortSignal => s !== undefined);
      return base.request(url, {
        ...options,
        ...(signals.length ? { signal: signals.length === 1 ? signals[0] : AbortSignal.any(signals) } : {}),
        allowPrivateNetworks: allowPrivateNetworks || options.allowPrivateNetworks === true,
      });
    },
  };
}
