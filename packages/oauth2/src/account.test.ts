import { describe, expect, it } from 'vitest';
import {
  apiErrorReasons,
  classifyApiError,
  createAccountClient,
  DEFAULT_TOKEN_URL,
  parseProviderAccount,
  providerAccountSchema,
} from './index.js';

describe('provider accounts', () => {
  it('applies the defaults', () => {
    const a = parseProviderAccount(
      { client_id: 'c', client_secret: 's', refresh_token: 'r' },
      { apiBaseUrl: 'https://api.example/' },
    );
    expect(a).toEqual({
      clientId: 'c',
      clientSecret: 's',
      refreshToken: 'r',
      tokenUrl: DEFAULT_TOKEN_URL,
      apiBaseUrl: 'https://api.example',
      allowPrivateNetworks: false,
    });
  });

  it('rejects missing fields and bad URLs with OAUTH2_BAD_ACCOUNT, naming the field but no value', () => {
    expect(() =>
      parseProviderAccount({ client_id: 'c', client_secret: 's' }, { apiBaseUrl: 'https://x' }),
    ).toThrow(
      expect.objectContaining({
        code: 'OAUTH2_BAD_ACCOUNT',
        message: expect.stringContaining('refresh_token'),
      }),
    );
    expect(() =>
      parseProviderAccount(
        { client_id: 'c', client_secret: 'hunter22', refresh_token: 'r', token_url: 'ftp://x' },
        { apiBaseUrl: 'https://x' },
      ),
    ).toThrow(/token_url/);
    expect(() => parseProviderAccount(null, { apiBaseUrl: 'https://x' })).toThrow(/no account block/);
  });

  it('the schema names the required fields and the api_base_url default', () => {
    const s = providerAccountSchema('https://gmail.example', 'mail account');
    expect(s.required).toEqual(['client_id', 'client_secret', 'refresh_token']);
    expect(s.properties.api_base_url.default).toBe('https://gmail.example');
    expect(s.properties.token_url.default).toBe(DEFAULT_TOKEN_URL);
  });
});

const body = (reason: string, status = 'PERMISSION_DENIED') =>
  JSON.stringify({
    error: { code: 403, message: 'Rate Limit Exceeded 401 410', errors: [{ reason }], status },
  });

describe('classifyApiError', () => {
  it('403 with a rate-limit reason is Transient; other 403s are Permanent', () => {
    expect(classifyApiError(403, body('rateLimitExceeded'))?.errorClass).toBe('transient');
    expect(classifyApiError(403, body('userRateLimitExceeded'))?.errorClass).toBe('transient');
    expect(classifyApiError(403, body('forbiddenForNonOrganizer'))?.errorClass).toBe('permanent');
    expect(classifyApiError(403, 'not json')?.errorClass).toBe('permanent');
  });

  it('classifies by status and reason only, never by message text', () => {
    const b = JSON.stringify({ error: { code: 503, message: 'quota 401 invalid_grant 410 Gone' } });
    expect(classifyApiError(503, b)?.errorClass).toBe('transient');
    expect(
      classifyApiError(404, JSON.stringify({ error: { message: 'rateLimitExceeded' } }))?.errorClass,
    ).toBe('permanent');
  });

  it('429, 408 and 5xx are Transient; 400, 404, 410 Permanent; 2xx null', () => {
    for (const s of [429, 408, 500, 502, 503]) expect(classifyApiError(s, '')?.errorClass).toBe('transient');
    for (const s of [400, 404, 410]) expect(classifyApiError(s, '')?.errorClass).toBe('permanent');
    expect(classifyApiError(200, '')).toBeNull();
  });

  it('reads reasons from errors[], details[] and status', () => {
    const b = JSON.stringify({
      error: {
        errors: [{ reason: 'a' }],
        details: [{ reason: 'RATE_LIMIT_EXCEEDED' }],
        status: 'RESOURCE_EXHAUSTED',
      },
    });
    expect(apiErrorReasons(b)).toEqual(['a', 'RATE_LIMIT_EXCEEDED', 'RESOURCE_EXHAUSTED']);
  });
});

describe('createAccountClient', () => {
  const http = {
    request: async () => ({
      status: 500,
      headers: {},
      body: Buffer.alloc(0),
      url: '',
      text: () => '',
      json: () => ({}),
    }),
  };
  it('refuses an agent without an account, and a malformed account, as permanent, with the fix', () => {
    expect(() =>
      createAccountClient({
        plugin: 'mail',
        agentId: 'a',
        account: null,
        apiBaseUrl: 'https://api.example',
        http,
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'OAUTH2_BAD_ACCOUNT',
        errorClass: 'permanent',
        message: expect.stringContaining('credentials: { mail: <account> }'),
      }),
    );
    expect(() =>
      createAccountClient({
        plugin: 'mail',
        agentId: 'a',
        account: { name: 'work', config: { client_id: 'x' } },
        apiBaseUrl: 'https://api.example',
        http,
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'OAUTH2_BAD_ACCOUNT',
        message: expect.stringMatching(/^mail account "work": /),
      }),
    );
  });
  it('builds a client for a valid account', () => {
    const { accountName, account, client } = createAccountClient({
      plugin: 'calendar',
      agentId: 'a',
      account: { name: 'work', config: { client_id: 'c', client_secret: 's-1234', refresh_token: 'r-1234' } },
      apiBaseUrl: 'https://api.example',
      http,
    });
    expect(accountName).toBe('work');
    expect(account.apiBaseUrl).toBe('https://api.example');
    expect(client.refreshCount()).toBe(0);
  });
});
