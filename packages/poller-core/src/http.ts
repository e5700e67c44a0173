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
      // Both signals only when the kind passes its own (rare): no array per request otherwise.
      const own = options.signal;
      const both = signal === undefined ? own : own === undefined ? signal : AbortSignal.any([signal, own]);
      return base.request(url, {
        ...options,
        ...(both !== undefined ? { signal: both } : {}),
        allowPrivateNetworks: allowPrivateNetworks || options.allowPrivateNetworks === true,
      });
    },
  };
}
