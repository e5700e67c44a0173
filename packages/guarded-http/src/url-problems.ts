/** URL checks for a job's config, run at validation so that operators learn at boot, not at fetch time. */
import { checkHostname } from './address-policy.js';

/**
 * Problems of a job URL, for a kind's `validate()`: not http(s), userinfo, or a literal host the SSRF guard
 * refuses (private or loopback while `allow_private_networks` is off; link-local, metadata and other
 * never-allowed ranges always). Host names are checked by the guard once resolved, at fetch time; this
 * check only lets operators learn at boot.
 */
export function urlProblems(field: string, raw: string, allowPrivateNetworks: boolean): string[] {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return [`${field} is not a valid URL; write it as https://host/path`];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return [`${field} must use http or https, not ${url.protocol.replace(/:$/, '')}`];
  if (url.username || url.password)
    return [`${field} must not contain user:password@; send credentials in a header instead`];
  const verdict = checkHostname(url.hostname, { allowPrivateNetworks });
  if (verdict.allowed) return [];
  const lifted = checkHostname(url.hostname, { allowPrivateNetworks: true }).allowed;
  return lifted
    ? [
        `${field} host ${url.hostname} is a private or loopback address (${verdict.reason}), refused by the SSRF guard; set allow_private_networks: true if the job must reach it`,
      ]
    : [`${field} host ${url.hostname} is never allowed (${verdict.reason})`];
}
