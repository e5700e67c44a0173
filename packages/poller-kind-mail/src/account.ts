/**
 * The `accounts.<name>` block of `plugins/mail.yaml`: `provider: gmail` (the default, the OAuth2 block
 * every existing config has) or `provider: imap`.
 */
import { providerAccountSchema } from '@agent/oauth2/account';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

export const MAIL_API_BASE_URL = 'https://gmail.googleapis.com';

const gmailAccountSchema = providerAccountSchema(MAIL_API_BASE_URL, 'Gmail account');

const imapAccountSchema = {
  type: 'object',
  title: 'IMAP account',
  additionalProperties: false,
  required: ['provider', 'host', 'user'],
  oneOf: [{ required: ['password'] }, { required: ['access_token'] }],
  properties: {
    provider: { const: 'imap', description: 'Read the mailbox over IMAP.' },
    host: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      pattern: '^[A-Za-z0-9.:\\[\\]-]+$',
      description: 'IMAP server host name or address (no scheme, no port).',
    },
    port: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      description: 'IMAP port. Default: 993 with `tls: implicit`, 143 otherwise.',
    },
    tls: {
      enum: ['implicit', 'starttls', 'none'],
      default: 'implicit',
      description:
        '`implicit` (TLS from the first byte, port 993), `starttls` (STARTTLS required, port 143), or `none` (plain text; only for a loopback server, and only with allow_private_networks).',
    },
    user: { type: 'string', minLength: 1, description: 'Login name.' },
    password: { type: 'string', minLength: 1, description: 'Password; normally `${file:...}`.' },
    access_token: {
      type: 'string',
      minLength: 1,
      description: 'OAuth2 access token for XOAUTH2 instead of a password; normally `${file:...}`.',
    },
    tls_ca_file: {
      type: 'string',
      minLength: 1,
      description:
        'PEM file of the CA certificate(s) trusted for this server instead of the system CAs (a private CA or a self-signed certificate); a relative path resolves against the working directory. Read at every connect.',
    },
    mailbox: { type: 'string', minLength: 1, default: 'INBOX', description: 'Mailbox to read.' },
    allow_private_networks: {
      type: 'boolean',
      default: false,
      description: 'Allow a host on loopback or private networks.',
    },
  },
} as const;

/** JSON Schema of one mail account: an IMAP block when `provider: imap`, a Gmail (OAuth2) block otherwise. */
export const mailAccountSchema = {
  type: 'object',
  title: 'mail account',
  if: { type: 'object', required: ['provider'], properties: { provider: { const: 'imap' } } },
  // oxlint-disable-next-line unicorn/no-thenable -- JSON Schema's if/then, not a promise
  then: imapAccountSchema,
  else: {
    ...gmailAccountSchema,
    properties: {
      provider: { const: 'gmail', default: 'gmail', description: '`gmail` (default) or `imap`.' },
      ...gmailAccountSchema.properties,
    },
  },
} as const;

type ImapTlsMode = 'implicit' | 'starttls' | 'none';

export interface ImapAccount {
  host: string;
  port: number;
  tls: ImapTlsMode;
  user: string;
  auth: { pass: string } | { accessToken: string };
  /** PEM file of the CAs to trust instead of the system's. */
  tlsCaFile?: string;
  mailbox: string;
  allowPrivateNetworks: boolean;
}

/** The provider an account block names (`gmail` when it names none). */
export function mailProviderOf(config: Readonly<Record<string, unknown>> | null | undefined): string {
  const p = config?.provider;
  return typeof p === 'string' ? p : 'gmail';
}

/** Reads an IMAP account block; each problem says the field and the fix. */
export function parseImapAccount(config: Readonly<Record<string, unknown>>): ImapAccount {
  const str = (key: string): string | undefined => {
    const v = config[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') throw new Error(`"${key}" must be a non-empty string`);
    return v;
  };
  const host = str('host');
  const user = str('user');
  if (!host) throw new Error('"host" is missing; set the IMAP server host name');
  if (!user) throw new Error('"user" is missing; set the login name');
  const tls = (str('tls') ?? 'implicit') as ImapTlsMode;
  if (!['implicit', 'starttls', 'none'].includes(tls))
    throw new Error('"tls" must be implicit, starttls or none');
  const password = str('password');
  const accessToken = str('access_token');
  if ((password === undefined) === (accessToken === undefined))
    throw new Error('set exactly one of "password" and "access_token"');
  const port = config.port ?? (tls === 'implicit' ? 993 : 143);
  if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535)
    throw new Error('"port" must be an integer 1..65535');
  const allow = config.allow_private_networks;
  if (allow !== undefined && typeof allow !== 'boolean')
    throw new Error('"allow_private_networks" must be true or false');
  return {
    host,
    port: port as number,
    tls,
    user,
    auth: password !== undefined ? { pass: password } : { accessToken: accessToken! },
    ...(str('tls_ca_file') !== undefined ? { tlsCaFile: str('tls_ca_file')! } : {}),
    mailbox: str('mailbox') ?? 'INBOX',
    allowPrivateNetworks: allow === true,
  };
}
