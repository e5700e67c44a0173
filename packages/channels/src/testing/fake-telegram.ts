import type { ServerResponse } from 'node:http';
import { setTimer, type TimerHandle } from '@agent/timers';
import { readBody, sendJson, startLoopbackServer } from './http.js';

export interface FakeTelegramOptions {
  /** The bot token the fake accepts; other tokens get 401 Unauthorized. */
  token: string;
  /** The clock of `polls` (epoch ms); default `Date.now`. */
  now?: () => number;
}

/** One accepted `sendMessage` call. */
export interface FakeTelegramSend {
  chatId: string;
  text: string;
  messageId: number;
}

export interface FakeTelegramRequest {
  method: string;
  /** Path with the token replaced by `<token>`, e.g. `/bot<token>/getUpdates`. */
  path: string;
  query: Record<string, string>;
  body: string;
}

/** One getUpdates call, from its arrival to its answer (or its client going away). */
export interface FakeTelegramPoll {
  /** `offset` as sent. */
  offset: number | undefined;
  /** When the call arrived (`now()`). */
  startedAt: number;
  /** When it was answered or its client went away; absent while it is open. */
  endedAt?: number;
  /** The status it was answered with; absent while open or when its client went away first. */
  status?: number;
  /** Answered 409 because another getUpdates arrived while it was open (two consumers of one bot). */
  conflict: boolean;
}

export interface FakeTelegram {
  /** Use as the instance's `base_url`. */
  readonly baseUrl: string;
  readonly sends: FakeTelegramSend[];
  readonly requests: FakeTelegramRequest[];
  /** Offsets (as sent) of every getUpdates call. */
  readonly getUpdatesOffsets: (number | undefined)[];
  /** Every getUpdates call (injected failures included) with when it started and ended, oldest first. */
  readonly polls: readonly FakeTelegramPoll[];
  /** Queues a private-chat text message; returns its `update_id`. */
  enqueueText(input: { chatId: number; text: string; fromId?: number }): number;
  /** Queues any update object; `update_id` is assigned when missing. Returns it. */
  enqueueUpdate(update: Record<string, unknown>): number;
  /** The next `times` sendMessage calls get 429 with `parameters.retry_after`. */
  rateLimitSends(retryAfterSecs: number, times?: number): void;
  /** The next `times` getUpdates calls fail with `status`. */
  failGetUpdates(status: number, times?: number): void;
  close(): Promise<void>;
}

function fail(res: ServerResponse, status: number, description: string, extra: object = {}): void {
  sendJson(res, status, { ok: false, error_code: status, description, ...extra });
}

interface Waiter {
  offset: number | undefined;
  res: ServerResponse;
  timer: TimerHandle;
  poll: FakeTelegramPoll;
}

/**
 * A loopback stand-in for the Telegram Bot API (`getUpdates` long polling and `sendMessage`),
 * following the public Bot API documentation: `{ok, result}` / `{ok: false, error_code,
 * description, parameters}` answers, offsets that confirm earlier updates, 409 for a second
 * concurrent getUpdates, 4096-character text limit.
 */
export async function createFakeTelegram(options: FakeTelegramOptions): Promise<FakeTelegram> {
  const sends: FakeTelegramSend[] = [];
  const requests: FakeTelegramRequest[] = [];
  const getUpdatesOffsets: (number | undefined)[] = [];
  const polls: FakeTelegramPoll[] = [];
  const now = options.now ?? Date.now;
  /** Ends a poll once: the first answer (or the client leaving) is when it ended. */
  const ended = (poll: FakeTelegramPoll, status: number | undefined, conflict = false): void => {
    if (poll.endedAt !== undefined) return;
    poll.endedAt = now();
    if (status !== undefined) poll.status = status;
    poll.conflict = conflict;
  };
  let queue: Record<string, unknown>[] = [];
  let nextUpdateId = 1000;
  let nextMessageId = 1;
  const sendLimits: number[] = [];
  const pollFailures: number[] = [];
  let waiter: Waiter | undefined;

  const pending = (offset: number | undefined): Record<string, unknown>[] => {
    if (offset !== undefined) queue = queue.filter((u) => (u.update_id as number) >= offset);
    return queue.slice(0, 100);
  };

  const answerWaiter = (): void => {
    if (!waiter) return;
    const updates = pending(waiter.offset);
    if (updates.length === 0) return;
    const w = waiter;
    waiter = undefined;
    w.timer.cancel();
    ended(w.poll, 200);
    sendJson(w.res, 200, { ok: true, result: updates });
  };

  const server = await startLoopbackServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = await readBody(req);
    const m = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    requests.push({
      method: m?.[2] ?? '',
      path: url.pathname.split(options.token).join('<token>'),
      query: Object.fromEntries(url.searchParams),
      body,
    });
    if (!m) {
      fail(res, 404, 'Not Found');
      return;
    }
    if (m[1] !== options.token) {
      fail(res, 401, 'Unauthorized');
      return;
    }
    // Parameters may come in the query string, as JSON or as a form body.
    const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const type = req.headers['content-type'] ?? '';
    if (body !== '' && type.includes('application/json')) {
      try {
        Object.assign(params, JSON.parse(body));
      } catch {
        fail(res, 400, "Bad Request: can't parse JSON object");
        return;
      }
    } else if (body !== '') {
      Object.assign(params, Object.fromEntries(new URLSearchParams(body)));
    }
    if (m[2] === 'getUpdates') {
      const poll: FakeTelegramPoll = {
        offset: params.offset === undefined ? undefined : Number(params.offset),
        startedAt: now(),
        conflict: false,
      };
      polls.push(poll);
      const status = pollFailures.shift();
      if (status !== undefined) {
        ended(poll, status);
        fail(
          res,
          status,
          status === 409 ? 'Conflict: terminated by other getUpdates request' : 'Internal Server Error',
        );
        return;
      }
      const offset = poll.offset;
      const timeout = params.timeout === undefined ? 0 : Number(params.timeout);
      getUpdatesOffsets.push(offset);
      if (waiter) {
        const old = waiter;
        waiter = undefined;
        old.timer.cancel();
        ended(old.poll, 409, true);
        fail(
          old.res,
          409,
          'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
        );
      }
      const updates = pending(offset);
      if (updates.length > 0 || timeout <= 0) {
        ended(poll, 200);
        sendJson(res, 200, { ok: true, result: updates });
        return;
      }
      const w: Waiter = {
        offset,
        res,
        poll,
        timer: setTimer(() => {
          if (waiter === w) waiter = undefined;
          ended(poll, 200);
          sendJson(res, 200, { ok: true, result: [] });
        }, timeout * 1000),
      };
      waiter = w;
      res.on('close', () => {
        ended(poll, undefined);
        w.timer.cancel();
        if (waiter === w) waiter = undefined;
      });
      return;
    }
    if (m[2] === 'sendMessage') {
      const chatId = params.chat_id;
      const text = params.text;
      if (chatId === undefined || chatId === '') {
        fail(res, 400, 'Bad Request: chat_id is empty');
        return;
      }
      if (typeof text !== 'string' || text === '') {
        fail(res, 400, 'Bad Request: message text is empty');
        return;
      }
      if (text.length > 4096) {
        fail(res, 400, 'Bad Request: message is too long');
        return;
      }
      const retryAfter = sendLimits.shift();
      if (retryAfter !== undefined) {
        fail(res, 429, `Too Many Requests: retry after ${retryAfter}`, {
          parameters: { retry_after: retryAfter },
        });
        return;
      }
      const messageId = nextMessageId++;
      sends.push({ chatId: String(chatId), text, messageId });
      sendJson(res, 200, {
        ok: true,
        result: {
          message_id: messageId,
          date: 1700000000,
          chat: { id: Number(chatId), type: 'private' },
          text,
        },
      });
      return;
    }
    fail(res, 404, 'Not Found');
  });

  const enqueueUpdate = (update: Record<string, unknown>): number => {
    const id = typeof update.update_id === 'number' ? update.update_id : nextUpdateId++;
    queue.push({ ...update, update_id: id });
    answerWaiter();
    return id;
  };

  return {
    baseUrl: server.baseUrl,
    sends,
    requests,
    getUpdatesOffsets,
    polls,
    enqueueUpdate,
    enqueueText({ chatId, text, fromId }) {
      return enqueueUpdate({
        message: {
          message_id: nextMessageId++,
          from: { id: fromId ?? chatId, is_bot: false, first_name: 'Test' },
          chat: { id: chatId, type: 'private', first_name: 'Test' },
          date: 1700000000,
          text,
        },
      });
    },
    rateLimitSends(retryAfterSecs, times = 1) {
      for (let i = 0; i < times; i++) sendLimits.push(retryAfterSecs);
    },
    failGetUpdates(status, times = 1) {
      for (let i = 0; i < times; i++) pollFailures.push(status);
    },
    async close() {
      waiter?.timer.cancel();
      waiter = undefined;
      await server.close();
    },
  };
}
