/**
 * The mailbox providers the shared acceptance cases run against, behind one small adapter: the loopback
 * Gmail API fake (with the fake token endpoint) and a real Dovecot over IMAP. A case adds messages and
 * reads back whether each is still unread; everything else goes through the kind and the poller service.
 */
import type { ImapFlow } from 'imapflow';
import { startDovecot, type DovecotServer } from '../src/testing.js';
import { imapAccount, startMailFixture } from './helpers.js';
import { plain } from './mime.js';

/** A message as a case writes it; `key` names it to the case. */
interface CaseMessage {
  key: string;
  /** Receipt time, ms. */
  at: number;
  /** Default `Shop <orders@shop.example>`. */
  from?: string;
  subject?: string;
  text?: string;
  /** Read before the job sees it (Gmail: no `UNREAD` label; IMAP: `\Seen`). */
  read?: boolean;
  /** The owner's draft (Gmail: `DRAFT` label; IMAP: `\Draft`). */
  draft?: boolean;
}

/** One case's own mailbox. */
export interface CaseMailbox {
  /** The block of `accounts.<name>` in plugins/mail.yaml that reads this mailbox. */
  readonly account: Record<string, unknown>;
  /** Values the logs and statuses must hide. */
  readonly secrets: string[];
  add(...messages: CaseMessage[]): Promise<void>;
  /** Whether the provider has the message unread now. */
  unread(key: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface MailProvider {
  readonly name: 'gmail' | 'imap';
  /** Before the cases of the provider (a server to start). */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** A new, empty mailbox; `now` is the case's clock (the Gmail fake evaluates `newer_than` with it). */
  mailbox(now: () => number): Promise<CaseMailbox>;
}

const FROM = 'Shop <orders@shop.example>';
const messageId = (key: string) => `${key}@acceptance.test`;

const gmailProvider: MailProvider = {
  name: 'gmail',
  async start() {},
  async stop() {},
  async mailbox(now) {
    const f = await startMailFixture(now);
    return {
      account: f.accountBlock,
      secrets: [f.tokens.refreshToken, f.tokens.clientSecret],
      async add(...messages) {
        f.gmail.add(
          ...messages.map((m) => ({
            id: m.key,
            at: m.at,
            from: m.from ?? FROM,
            subject: m.subject ?? '',
            text: m.text ?? '',
            labels: ['INBOX', ...(m.read ? [] : ['UNREAD']), ...(m.draft ? ['DRAFT'] : [])],
          })),
        );
      },
      unread: async (key) => f.gmail.labels(key).includes('UNREAD'),
      close: () => f.close(),
    };
  },
};

/** Dovecot, one mailbox per case; the test's own session appends mail and reads flags. */
function dovecotProvider(): MailProvider {
  let server: DovecotServer;
  let admin: ImapFlow;
  let boxes = 0;
  return {
    name: 'imap',
    async start() {
      server = await startDovecot();
      admin = await server.session();
    },
    async stop() {
      await admin?.logout();
      await server?.stop();
    },
    async mailbox() {
      const box = `Case${++boxes}`;
      await admin.mailboxCreate(box);
      return {
        account: imapAccount(server, box),
        secrets: [server.password],
        async add(...messages) {
          for (const m of messages)
            await admin.append(
              box,
              plain(
                { from: m.from ?? FROM, subject: m.subject ?? '', messageId: messageId(m.key) },
                m.text ?? '',
              ),
              [...(m.read ? ['\\Seen'] : []), ...(m.draft ? ['\\Draft'] : [])],
              new Date(m.at),
            );
        },
        async unread(key) {
          const lock = await admin.getMailboxLock(box);
          try {
            for await (const m of admin.fetch('1:*', { envelope: true, flags: true }, { uid: true }))
              if (m.envelope?.messageId === `<${messageId(key)}>`) return !m.flags?.has('\\Seen');
            throw new Error(`no message ${key} in ${box}`);
          } finally {
            lock.release();
          }
        },
        async close() {},
      };
    },
  };
}

export const mailProviders: MailProvider[] = [gmailProvider, dovecotProvider()];
