import { runKindTick, testPollerKind } from '@agent/poller-core/testing';
import { renderTemplate, type PollItem } from '@agent/poller-core';
import { GuardedHttpError } from '@agent/guarded-http';
import { afterEach, describe, expect, it } from 'vitest';
import { sharedFor, startMailFixture, type MailFixture } from '../test/helpers.js';
import { toPollerError } from './api.js';
import { mailPollerKind, tickQuery, type MailShared } from './kind.js';

const HOUR = 3_600_000;
const ago = (h: number) => Date.now() - h * HOUR;

let fixtures: MailFixture[] = [];
afterEach(async () => {
  for (const f of fixtures) await f.close();
  fixtures = [];
});

let current: MailFixture | null = null;
async function fixture(): Promise<MailFixture> {
  const f = await startMailFixture();
  fixtures.push(f);
  current = f;
  return f;
}

const render = (item: PollItem, template: string) => renderTemplate(template, item.fields);

const base = {
  query: 'is:unread',
  deliver: { channel: 'chat_a', to: 'u1' },
  message_template: '{subject}: {snippet}',
};

// The suite takes one account for every scenario; each scenario has its own fixture, so the account
// block follows the fixture started last.
const account = {
  name: 'work',
  get config() {
    return current?.accountBlock ?? { client_id: 'c', client_secret: 's', refresh_token: 'r' };
  },
};

testPollerKind(mailPollerKind, {
  validConfigs: [
    base,
    { ...base, query: '', newer_than: '7d', max_per_tick: 5, dispatch_delay_ms: 0 },
    {
      ...base,
      sender_allowlist: ['example.com', 'boss@corp.com', '@shop.example'],
      extract: { phone: '(?i)tel[eé]fono:\\s*(\\S+)', name: 'Nombre: (.+)' },
      require_fields: ['phone'],
      message_template: '📞 {name} — {phone} ({from}, {from_address}, {date}, {id}, {thread_id})',
      mark_read_on_dispatch: false,
    },
  ],
  invalidConfigs: [
    {},
    { ...base, query: 5 },
    { ...base, newer_than: '2 days' },
    { ...base, newer_than: '3h' },
    { ...base, extract: { x: '(unclosed' } },
    { ...base, require_fields: ['phone'] },
    { ...base, message_template: 'Hi {name}' },
    { ...base, sender_allowlist: ['not a domain'] },
    { ...base, extract: { subject: '(x)' } },
    { ...base, mark_read_on_dispatch: 'yes' },
    { ...base, unknown_field: 1 },
  ],
  account,
  scenarios: {
    ok: async () => {
      const f = await fixture();
      f.gmail.add(
        { id: 'm1', at: ago(3), subject: 'first', text: 'one' },
        { id: 'm2', at: ago(2), subject: 'second', text: 'two' },
      );
      return { config: f.config() };
    },
    transient: async () => {
      const f = await fixture();
      f.gmail.fail('list', 503, 'backendError', Infinity);
      return { config: f.config() };
    },
    permanent: async () => {
      const f = await fixture();
      f.tokens.revoke();
      return { config: f.config() };
    },
    hang: async () => {
      const f = await fixture();
      f.gmail.hang('list');
      return { config: f.config() };
    },
  },
});

// The conformance suite builds its own shared client from `account`; point it at each fixture.
async function tick(f: MailFixture, over: Record<string, unknown> = {}, shared?: MailShared) {
  return runKindTick(mailPollerKind, f.config(over), {
    account: f.account,
    ...(shared ? { shared } : {}),
  });
}

describe('mail tick', () => {
  it('lists with the query plus newer_than, pages through every page, and returns oldest first', async () => {
    const f = await fixture();
    for (let i = 0; i < 1100; i++)
      f.gmail.add({ id: `m${String(i).padStart(4, '0')}`, at: ago(40) + i * 1000, subject: `s${i}` });
    f.gmail.add({ id: 'old', at: ago(24 * 5), subject: 'too old' });
    const r = await tick(f, { query: 'is:unread label:inbox', newer_than: '3d' });
    const lists = f.gmail.requests.filter((q) => q.route === 'list');
    expect(lists.map((q) => q.params.q)).toEqual(Array(3).fill('is:unread label:inbox newer_than:3d'));
    expect(lists.map((q) => q.params.pageToken)).toEqual([undefined, 'p500', 'p1000']);
    expect(r.items).toHaveLength(1100);
    expect(r.items[0]!.id).toBe('m0000');
    expect(r.items.at(-1)!.id).toBe('m1099');
    expect(r.cursor).toBeUndefined();
    expect(f.gmail.requests.find((q) => q.route === 'get')!.params.format).toBe('full');
  });

  it('tickQuery appends newer_than and never adds is:unread itself', () => {
    expect(tickQuery({ query: 'from:shop.example', newer_than: '2d' })).toBe(
      'from:shop.example newer_than:2d',
    );
    expect(tickQuery({ query: '', newer_than: '1m' })).toBe('newer_than:1m');
  });

  it('skips drafts, sent and scheduled mail', async () => {
    const f = await fixture();
    f.gmail.add(
      { id: 'draft', at: ago(4), labels: ['DRAFT', 'UNREAD'] },
      { id: 'sent', at: ago(3), labels: ['SENT', 'UNREAD'] },
      { id: 'sched', at: ago(2), labels: ['SCHEDULED', 'UNREAD'] },
      { id: 'inbox', at: ago(1) },
    );
    expect((await tick(f)).items.map((i) => i.id)).toEqual(['inbox']);
  });

  it('decodes bodies, headers and snippets, keeps Unicode, and renders every built-in placeholder', async () => {
    const f = await fixture();
    f.gmail.add(
      {
        id: 'u1',
        at: ago(1),
        from: '=?UTF-8?Q?Jos=C3=A9_P=C3=A9rez?= <Jose@Example.com>',
        subject: '=?UTF-8?B?8J+TniBOdWV2YSBzb2xpY2l0dWQ=?=',
        date: 'Mon, 2 Mar 2026 10:00:00 +0100',
        text: "Nombre: Ana María\nTeléfono: +34 600 000 000\nIt's done",
      },
      {
        id: 'latin',
        at: ago(0.5),
        subject: '=?ISO-8859-1?Q?Se=F1al?=',
        charset: 'iso-8859-1',
        text: 'Código: ÑANDÚ',
      },
      {
        id: 'html',
        at: ago(0.2),
        subject: 'html only',
        html: '<p>Pedido&nbsp;<b>#77</b> &amp; m&aacute;s</p>',
        snippet: 'Pedido #77 &amp; m&aacute;s',
      },
      {
        id: 'qp',
        at: ago(0.1),
        subject: 'qp',
        textBytes: Buffer.from('Precio =3D 10 =E2=82=AC=\r\nfin', 'latin1'),
        partHeaders: { 'Content-Transfer-Encoding': 'quoted-printable' },
      },
    );
    const r = await tick(f, {
      extract: {
        name: 'Nombre: (.+)',
        phone: 'Teléfono: (.+)',
        code: 'Código: (\\S+)',
        order: '#(\\d+)',
        price: 'Precio = (.+)',
      },
      message_template: '{subject} | {from} | {from_address} | {name} | {phone} | {snippet}',
    });
    const [u1, latin, html, qp] = r.items;
    expect(
      render(
        u1!,
        '{subject} | {from} | {from_address} | {name} | {phone} | {snippet} | {date} | {id} | {thread_id}',
      ),
    ).toBe(
      "📞 Nueva solicitud | José Pérez <Jose@Example.com> | jose@example.com | Ana María | +34 600 000 000 | Nombre: Ana María\nTeléfono: +34 600 000 000\nIt's done | Mon, 2 Mar 2026 10:00:00 +0100 | u1 | t-u1",
    );
    expect(render(latin!, '{subject} {code}')).toBe('Señal ÑANDÚ');
    expect(render(html!, '{order} {snippet}')).toBe('77 Pedido #77 & más');
    expect(render(qp!, '{price}')).toBe('10 €fin');
  });

  it('filters by sender_allowlist inside the tick: rejected mail never takes a max_per_tick slot', async () => {
    const f = await fixture();
    for (let i = 0; i < 30; i++)
      f.gmail.add({ id: `spam${i}`, at: ago(10) + i, from: `"boss@corp.com" <evil${i}@x.com>` });
    f.gmail.add({ id: 'good', at: ago(1), from: 'Boss <boss@corp.com>' });
    f.gmail.add({ id: 'sub', at: ago(0.5), from: 'a@mail.corp.com' });
    const r = await tick(f, { sender_allowlist: ['boss@corp.com', 'mail.corp.com'], max_per_tick: 1 });
    expect(r.items.map((i) => i.id)).toEqual(['good', 'sub']);
  });

  it('require_fields drops messages without the field; a message is fetched once per shared client', async () => {
    const f = await fixture();
    f.gmail.add({ id: 'a', at: ago(2), text: 'Order 12' }, { id: 'b', at: ago(1), text: 'nothing' });
    const shared = await sharedFor(f);
    const cfg = {
      extract: { order: 'Order (\\d+)' },
      require_fields: ['order'],
      message_template: '{order}',
    };
    expect((await tick(f, cfg, shared)).items.map((i) => i.id)).toEqual(['a']);
    expect((await tick(f, cfg, shared)).items.map((i) => i.id)).toEqual(['a']);
    expect(f.gmail.count('get')).toBe(2);
    shared.close();
  });

  it('onDelivered removes UNREAD with batchModify; without mark_read_on_dispatch there is no follow-up', async () => {
    const f = await fixture();
    f.gmail.add({ id: 'a', at: ago(1) });
    const shared = await sharedFor(f);
    const r = await tick(f, {}, shared);
    expect(f.gmail.labels('a')).toContain('UNREAD');
    await r.items[0]!.onDelivered!();
    shared.close();
    expect(f.gmail.labels('a')).not.toContain('UNREAD');
    expect(f.gmail.requests.find((q) => q.route === 'batchModify')!.body).toEqual({
      ids: ['a'],
      removeLabelIds: ['UNREAD'],
    });
    const r2 = await tick(f, { mark_read_on_dispatch: false, query: '' });
    expect(r2.items[0]!.onDelivered).toBeUndefined();
  });

  it('a message deleted between list and get is skipped', async () => {
    const f = await fixture();
    f.gmail.add({ id: 'a', at: ago(1) });
    f.gmail.fail('get', 404, 'notFound');
    expect((await tick(f)).items).toEqual([]);
  });
});

async function failure(f: MailFixture) {
  return tick(f).then(
    () => null,
    (e: unknown) => e as { code: string; message: string; retryAfterMs?: number },
  );
}

describe('mail errors', () => {
  it.each([
    [403, 'userRateLimitExceeded', 'POLLER_TRANSIENT'],
    [403, 'rateLimitExceeded', 'POLLER_TRANSIENT'],
    [429, 'rateLimitExceeded', 'POLLER_TRANSIENT'],
    [500, 'backendError', 'POLLER_TRANSIENT'],
    [403, 'insufficientPermissions', 'POLLER_PERMANENT'],
    [404, 'notFound', 'POLLER_PERMANENT'],
    [400, 'invalidArgument', 'POLLER_PERMANENT'],
  ])('messages.list %i %s -> %s', async (status, reason, code) => {
    const f = await fixture();
    f.gmail.fail('list', status, reason, Infinity, '30');
    const err = await failure(f);
    expect(err?.code).toBe(code);
    expect(err?.message).toContain(`answered ${status} (${reason}`);
    if (code === 'POLLER_TRANSIENT') expect(err?.retryAfterMs).toBe(30_000);
  });

  it('an HTTP failure is Permanent only when the client refused the request itself', () => {
    const refused = toPollerError(
      new GuardedHttpError('HTTP_REDIRECT_REFUSED', 'refused'),
      'work',
      'batchModify',
    );
    expect(refused).toMatchObject({ code: 'POLLER_PERMANENT' });
    expect((refused as Error).message).toContain('the URL was refused (HTTP_REDIRECT_REFUSED)');
    expect(toPollerError(new GuardedHttpError('HTTP_SSRF_BLOCKED', 'blocked'), 'work', 'list')).toMatchObject(
      {
        code: 'POLLER_PERMANENT',
      },
    );
    expect(toPollerError(new GuardedHttpError('HTTP_TIMEOUT', 'timed out'), 'work', 'list')).toMatchObject({
      code: 'POLLER_TRANSIENT',
    });
  });

  it('401 -> one refresh and retry; a refresh refused with invalid_grant is Permanent', async () => {
    const f = await fixture();
    f.gmail.add({ id: 'a', at: ago(1) });
    const shared = await sharedFor(f);
    await tick(f, {}, shared);
    f.tokens.expireTokens();
    expect((await tick(f, {}, shared)).items).toHaveLength(1);
    expect(f.tokens.requests).toBe(2);
    f.tokens.revoke();
    const err = await tick(f, {}, shared).catch((e: unknown) => e as Error & { code: string });
    expect(err).toMatchObject({ code: 'POLLER_PERMANENT' });
    expect((err as Error).message).toMatch(/OAUTH2_INVALID_GRANT/);
    expect((err as Error).message).not.toContain(f.tokens.refreshToken);
    shared.close();
  });

  it('an account without a refresh token is refused when the shared client is built', async () => {
    await expect(
      Promise.resolve().then(() =>
        mailPollerKind.createShared!({
          agentId: 'x',
          account: { name: 'work', config: { client_id: 'c', client_secret: 's' } },
          http: { request: () => Promise.reject(new Error('unused')) },
          logger: {
            debug() {},
            info() {},
            warn() {},
            error() {},
            child() {
              return this;
            },
          },
        }),
      ),
    ).rejects.toMatchObject({ code: 'POLLER_PERMANENT', message: expect.stringMatching(/refresh_token/) });
  });
});
