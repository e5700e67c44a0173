/**
 * `events.list` of the calendar API (Calendar API v3 shape) through the agent's OAuth2 client. Failures
 * become poller-core errors by status and error reason only; 410 (sync token expired) is Permanent.
 */
import { classifyApiError, isOAuth2Error, type RefreshTokenClient } from '@agent/oauth2';
import { classifyError, PermanentError, TransientError, type PollerErrorOptions } from '@agent/poller-core';
import type { CalendarEvent } from './render.js';
import { codeOf } from '@agent/guarded-http';

export const EVENTS_PAGE_SIZE = 250;

function retry(ms: number | undefined): PollerErrorOptions {
  return ms === undefined ? {} : { retryAfterMs: ms };
}

/** Maps a thrown error (OAuth2, HTTP) to Transient/Permanent; an abort is passed through. */
function toPollerError(err: unknown, account: string): unknown {
  if (isOAuth2Error(err)) {
    const Cls = err.errorClass === 'permanent' ? PermanentError : TransientError;
    return new Cls(`calendar account "${account}": ${err.message} [${err.code}]`, {
      cause: err,
      ...retry(err.retryAfterMs),
    });
  }
  const code = codeOf(err);
  if (code === 'HTTP_ABORTED' || code === 'POLLER_TRANSIENT' || code === 'POLLER_PERMANENT') return err;
  // The poller errors passed through above, so `permanent` here is a request the HTTP client refused.
  if (classifyError(err) === 'permanent')
    return new PermanentError(
      `calendar API events.list: the URL was refused (${code}); fix api_base_url, or set allow_private_networks for a private host`,
      { cause: err },
    );
  return new TransientError(`calendar API events.list failed (${code ?? 'network error'}); retrying later`, {
    cause: err,
  });
}

interface EventsPage {
  items: CalendarEvent[];
  nextPageToken?: string;
  nextSyncToken?: string;
}

export interface CalendarApi {
  /** One `events.list` page. `params` never mixes `syncToken` with the parameters Google forbids with it. */
  listEvents(
    calendarId: string,
    params: Record<string, string>,
    signal: AbortSignal | undefined,
  ): Promise<EventsPage>;
}

export function createCalendarApi(opts: {
  client: RefreshTokenClient;
  apiBaseUrl: string;
  account: string;
  allowPrivateNetworks: boolean;
}): CalendarApi {
  return {
    async listEvents(calendarId, params, signal) {
      const url = `${opts.apiBaseUrl}/calendar/v3/calendars/${encodeURIComponent(calendarId)}/events?${new URLSearchParams(params)}`;
      let res;
      try {
        res = await opts.client.request(url, {
          allowPrivateNetworks: opts.allowPrivateNetworks,
          ...(signal ? { signal } : {}),
        });
      } catch (err) {
        throw toPollerError(err, opts.account);
      }
      const text = res.text();
      const problem = classifyApiError(res.status, text);
      if (problem) {
        const reasons = problem.reasons.length ? ` (${problem.reasons.join(', ')})` : '';
        const hint =
          res.status === 410
            ? 'the sync token expired; run `agent pollers reset <job>` to record a new baseline, then resume the job'
            : problem.errorClass === 'transient'
              ? 'retrying later'
              : res.status === 404
                ? 'check calendar_id and api_base_url'
                : res.status === 403
                  ? 'check that the account may read this calendar (scopes, sharing)'
                  : 'check the job config and the account';
        const Cls = problem.errorClass === 'permanent' ? PermanentError : TransientError;
        throw new Cls(
          `calendar API events.list answered ${res.status}${reasons}; ${hint}`,
          retry(res.retryAfterMs),
        );
      }
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new TransientError(
          `calendar API events.list answered ${res.status} with a body that is not JSON`,
        );
      }
      const b = (body && typeof body === 'object' ? body : {}) as {
        items?: unknown;
        nextPageToken?: unknown;
        nextSyncToken?: unknown;
      };
      const page: EventsPage = {
        items: Array.isArray(b.items)
          ? (b.items as unknown[]).filter(
              (e): e is CalendarEvent =>
                !!e && typeof e === 'object' && typeof (e as { id?: unknown }).id === 'string',
            )
          : [],
      };
      if (typeof b.nextPageToken === 'string' && b.nextPageToken) page.nextPageToken = b.nextPageToken;
      if (typeof b.nextSyncToken === 'string' && b.nextSyncToken) page.nextSyncToken = b.nextSyncToken;
      return page;
    },
  };
}
