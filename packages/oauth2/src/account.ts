/** The provider-account block (`plugins/<kind>.yaml` `accounts.<name>`) shared by the OAuth2 kinds. */
import { OAuth2Error } from './errors.js';

export const DEFAULT_TOKEN_URL = 'https://oauth2.googleapis.com/token';

export interface ProviderAccount {
  clientId: string;
  clientSecret: string;
  refreshToken: string;
  tokenUrl: string;
  /** No trailing slash. */
  apiBaseUrl: string;
  allowPrivateNetworks: boolean;
}

/** JSON Schema of one account block; `apiBaseUrl` is the default of `api_base_url`. */
export function providerAccountSchema(apiBaseUrl: string, title: string) {
  return {
    type: 'object',
    title,
    additionalProperties: false,
    required: ['client_id', 'client_secret', 'refresh_token'],
    properties: {
      client_id: { type: 'string', minLength: 1, description: 'OAuth client id.' },
      client_secret: {
        type: 'string',
        minLength: 1,
        description: 'OAuth client secret; normally `${file:...}`.',
      },
      refresh_token: {
        type: 'string',
        minLength: 1,
        description: 'Long-lived refresh token of the mailbox or calendar owner; normally `${file:...}`.',
      },
      token_url: {
        type: 'string',
        format: 'uri',
        pattern: '^https?://',
        default: DEFAULT_TOKEN_URL,
        description: 'OAuth2 token endpoint.',
      },
      api_base_url: {
        type: 'string',
        format: 'uri',
        pattern: '^https?://',
        default: apiBaseUrl,
        description: 'Base URL of the provider API (tests point it at a local fake).',
      },
      allow_private_networks: {
        type: 'boolean',
        default: false,
        description: 'Allow token and API URLs on loopback or private networks.',
      },
    },
  } as const;
}

function str(config: Readonly<Record<string, unknown>>, key: string, fallback?: string): string {
  const v = config[key];
  if (typeof v === 'string' && v.length > 0) return v;
  if (v === undefined && fallback !== undefined) return fallback;
  throw new OAuth2Error(
    'OAUTH2_BAD_ACCOUNT',
    `account "${key}" is ${v === undefined ? 'missing' : 'not a non-empty string'}; set it in the plugin file`,
  );
}

function httpUrl(value: string, key: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new OAuth2Error('OAUTH2_BAD_ACCOUNT', `account "${key}" is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new OAuth2Error('OAUTH2_BAD_ACCOUNT', `account "${key}" must be an http(s) URL`);
  return value;
}

/** Reads an account block (defaults applied here too, so a block that skipped the schema still works). */
export function parseProviderAccount(
  config: Readonly<Record<string, unknown>> | null | undefined,
  defaults: { apiBaseUrl: string },
): ProviderAccount {
  if (!config || typeof config !== 'object')
    throw new OAuth2Error('OAUTH2_BAD_ACCOUNT', 'no account block; name an account in the agent credentials');
  const allow = config.allow_private_networks;
  if (allow !== undefined && typeof allow !== 'boolean')
    throw new OAuth2Error('OAUTH2_BAD_ACCOUNT', 'account "allow_private_networks" must be true or false');
  return {
    clientId: str(config, 'client_id'),
    clientSecret: str(config, 'client_secret'),
    refreshToken: str(config, 'refresh_token'),
    tokenUrl: httpUrl(str(config, 'token_url', DEFAULT_TOKEN_URL), 'token_url'),
    apiBaseUrl: httpUrl(str(config, 'api_base_url', defaults.apiBaseUrl), 'api_base_url').replace(/\/+$/, ''),
    allowPrivateNetworks: allow === true,
  };
}
