/**
 * The mail API calls the kind makes (Gmail API v1 shape: `users.messages.list`, `.get`, `.batchModify`),
 * through the agent's OAuth2 client. Failures become poller-core errors by status and error code only.
 */
import {
  classifyApiError,
  isOAuth2Error,
  type OAuth2RequestOptions,
  type RefreshTokenClient,
} from '@agent/oauth2';
import { classifyError, PermanentError, TransientError, type PollerErrorOptions } from '@agent/poller-core';
import { codeOf } from '@agent/guarded-http';

/** Ids one listing returns at most (pages of 500); older matches wait until the window moves. */
const LIST_MAX_IDS = 2500;
const LIST_PAGE_SIZE = 500;
/** Deadline of one mark-read call. */
const MARK_READ_TIMEOUT_MS = 10_000;

function retry(ms: number | undefined): PollerErrorOptions {
  return ms === undefined ? {} : { retryAfterMs: ms };
}

/** Maps a thrown error (OAuth2, HTTP) to Transient/Permanent; an abort is passed through. */
export function toPollerError(err: unknown, account: string, what: string): unknown {
  if (isOAuth2Error(err)) {
    const Cls = err.errorClass === 'permanent' ? PermanentError : TransientError;
    return new Cls(`mail account "${account}": ${err.message} [${err.code}]`, {
      cause: err,
      ...retry(err.retryAfterMs),
    });
  }
  const code = codeOf(err);
  if (code === 'HTTP_ABORTED' || code === 'POLLER_TRANSIENT' || code === 'POLLER_PERMANENT') return err;
  // The poller errors passed through above, so `permanent` here is a request the HTTP client refused.
  if (classifyError(err) === 'permanent')
    return new PermanentError(
      `mail API ${what}: the URL was refused (${code}); fix api_base_url, or set allow_private_networks for a private host`,
      { cause: err },
    );
  return new TransientError(`mail API ${what} failed (${code ?? 'network error'}); retrying later`, {
    cause: err,
  });
}

interface ListResult {
  ids: string[];
  /** More matches existed than were listed. */
  truncated: boolean;
  /** `resultSizeEstimate` of the first page. */
  estimate: number;
}

export interface MailApi {
  /** Ids matching `q`, newest first as the API lists them, paging `pageToken` up to `maxIds`. */
  list(q: string, signal: AbortSignal | undefined, maxIds?: number): Promise<ListResult>;
  /** A message resource (`format=full`), or `null` when it no longer exists (404). */
  get(id: string, signal: AbortSignal | undefined): Promise<unknown>;
  /** Removes `UNREAD` from `ids` (`batchModify`, at most 1000 ids per call). */
  markRead(ids: readonly string[], signal?: AbortSignal): Promise<void>;
}

export function createMailApi(opts: {
  client: RefreshTokenClient;
  apiBaseUrl: string;
  account: string;
  allowPrivateNetworks: boolean;
}): MailApi {
  const base = `${opts.apiBaseUrl}/gmail/v1/users/me`;

  const call = async (
    what: string,
    url: string,
    init: OAuth2RequestOptions,
    allow404 = false,
  ): Promise<unknown> => {
    let res;
    try {
      res = await opts.client.request(url, { ...init, allowPrivateNetworks: opts.allowPrivateNetworks });
    } catch (err) {
      throw toPollerError(err, opts.account, what);
    }
    const text = res.text();
    if (allow404 && res.status === 404) return null;
    const problem = classifyApiError(res.status, text);
    if (problem) {
      const reasons = problem.reasons.length ? ` (${problem.reasons.join(', ')})` : '';
      const hint =
        problem.errorClass === 'transient'
          ? 'retrying later'
          : res.status === 404
            ? 'check api_base_url'
            : res.status === 403
              ? 'check the scopes granted to the account (gmail.modify)'
              : 'check the job query and the account';
      const Cls = problem.errorClass === 'permanent' ? PermanentError : TransientError;
      throw new Cls(`mail API ${what} answered ${res.status}${reasons}; ${hint}`, retry(res.retryAfterMs));
    }
    if (text.trim() === '') return null;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new TransientError(`mail API ${what} answered ${res.status} with a body that is not JSON`);
    }
  };

  return {
    async list(q, signal, maxIds = LIST_MAX_IDS) {
      const ids: string[] = [];
      let pageToken: string | undefined;
      let estimate = 0;
      for (let page = 0; ; page++) {
        const params = new URLSearchParams({ q, maxResults: String(LIST_PAGE_SIZE) });
        if (pageToken) params.set('pageToken', pageToken);
        const body = (await call(
          'messages.list',
          `${base}/messages?${params}`,
          signal ? { signal } : {},
        )) as {
          messages?: { id?: unknown }[];
          nextPageToken?: unknown;
          resultSizeEstimate?: unknown;
        } | null;
        if (page === 0) estimate = Number(body?.resultSizeEstimate ?? 0) || 0;
        for (const m of body?.messages ?? []) if (typeof m?.id === 'string') ids.push(m.id);
        pageToken =
          typeof body?.nextPageToken === 'string' && body.nextPageToken ? body.nextPageToken : undefined;
        if (!pageToken) return { ids, truncated: false, estimate };
        if (ids.length >= maxIds) return { ids, truncated: true, estimate };
      }
    },
    get(id, signal) {
      return call(
        'messages.get',
        `${base}/messages/${encodeURIComponent(id)}?format=full`,
        signal ? { signal } : {},
        true,
      );
    },
    async markRead(ids, signal) {
      for (let i = 0; i < ids.length; i += 1000)
        await call('messages.batchModify', `${base}/messages/batchModify`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ids: ids.slice(i, i + 1000), removeLabelIds: ['UNREAD'] }),
          // A follow-up after delivery: it must not hold the tick for the client's full deadline.
          timeoutMs: MARK_READ_TIMEOUT_MS,
          ...(signal ? { signal } : {}),
        });
    },
  };
}
