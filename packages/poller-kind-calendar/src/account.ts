/**
 * The `accounts.<name>` block of `plugins/calendar.yaml`: `provider: google` (the default, the OAuth2
 * block every existing config has) or `provider: caldav`.
 */
import { providerAccountSchema } from '@agent/oauth2/account';
// The generated validators of this package's schemas (see scripts/gen-validators.mjs).
import './validators.generated.js';

export const CALENDAR_API_BASE_URL = 'https://www.googleapis.com';

const googleAccountSchema = providerAccountSchema(CALENDAR_API_BASE_URL, 'Google Calendar account');

const caldavAccountSchema = {
  type: 'object',
  title: 'CalDAV account',
  additionalProperties: false,
  required: ['provider', 'url', 'user', 'password'],
  properties: {
    provider: { const: 'caldav', description: 'Follow a CalDAV calendar collection.' },
    url: {
      type: 'string',
      format: 'uri',
      pattern: '^https?://',
      description:
        'URL of the calendar collection (ends with `/`), e.g. `https://dav.example.com/alice/team/`.',
    },
    user: { type: 'string', minLength: 1, description: 'User name (HTTP Basic).' },
    password: {
      type: 'string',
      minLength: 1,
      description: 'Password or app password; normally `${file:...}`.',
    },
    allow_private_networks: {
      type: 'boolean',
      default: false,
      description: 'Allow a collection URL on loopback or private networks.',
    },
  },
} as const;

/** JSON Schema of one calendar account: a CalDAV block when `provider: caldav`, a Google (OAuth2) block otherwise. */
export const calendarAccountSchema = {
  type: 'object',
  title: 'calendar account',
  if: { type: 'object', required: ['provider'], properties: { provider: { const: 'caldav' } } },
  // oxlint-disable-next-line unicorn/no-thenable -- JSON Schema's if/then, not a promise
  then: caldavAccountSchema,
  else: {
    ...googleAccountSchema,
    properties: {
      provider: { const: 'google', default: 'google', description: '`google` (default) or `caldav`.' },
      ...googleAccountSchema.properties,
    },
  },
} as const;

export interface CaldavAccount {
  /** Ends with `/`. */
  url: string;
  user: string;
  password: string;
  allowPrivateNetworks: boolean;
}

export function calendarProviderOf(config: Readonly<Record<string, unknown>> | null | undefined): string {
  const p = config?.provider;
  return typeof p === 'string' ? p : 'google';
}

/** Reads a CalDAV account block; each problem says the field and the fix. */
export function parseCaldavAccount(config: Readonly<Record<string, unknown>>): CaldavAccount {
  const str = (key: string): string => {
    const v = config[key];
    if (typeof v !== 'string' || v === '') throw new Error(`"${key}" is missing or empty; set it`);
    return v;
  };
  const url = str('url');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('"url" is not a URL; set the calendar collection URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error('"url" must be http(s)');
  return {
    url: url.endsWith('/') ? url : `${url}/`,
    user: str('user'),
    password: str('password'),
    allowPrivateNetworks: config.allow_private_networks === true,
  };
}
