import { runKindTick } from '@agent/poller-core/testing';
import { describe, expect, it } from 'vitest';
import { mailPollerKind } from './kind.js';

const config = {
  query: 'label:work is:unread',
  deliver: { channel: 'chat_a', to: 'u1' },
  message_template: '{subject}',
};
// Port 9 on loopback: nothing answers, and nothing is asked before the query is checked.
const imap = {
  name: 'work',
  config: {
    provider: 'imap',
    host: '127.0.0.1',
    port: 9,
    tls: 'none',
    user: 'alice',
    password: 'secret',
    allow_private_networks: true,
  },
};
const ctx = { jobId: 'orders', agentId: 'assistant' };

describe('an untranslatable query on an IMAP account', () => {
  it('is a located problem of the job when it is loaded; the same query suits a Gmail account', () => {
    expect(mailPollerKind.validateWithAccount!(config as never, { ...ctx, account: imap })).toEqual([
      {
        path: ['query'],
        message: expect.stringMatching(
          /^mail account "work" is an IMAP account.*"label:work" at character 1/,
        ),
        fix: expect.stringMatching(/^rewrite the query with from:, to:/),
      },
    ]);
    const ok = { ...config, query: 'from:shop.example is:unread' };
    expect(mailPollerKind.validateWithAccount!(ok as never, { ...ctx, account: imap })).toEqual([]);
    const gmail = { name: 'work', config: { client_id: 'c', client_secret: 's', refresh_token: 'r' } };
    expect(mailPollerKind.validateWithAccount!(config as never, { ...ctx, account: gmail })).toEqual([]);
  });

  it('is still refused by the tick (Permanent, before any connection) when it reaches one', async () => {
    await expect(runKindTick(mailPollerKind, config, { account: imap })).rejects.toMatchObject({
      code: 'POLLER_PERMANENT',
      message: expect.stringMatching(/config\.query .*"label:work" at character 1.*; rewrite it with from:/),
    });
  });
});
