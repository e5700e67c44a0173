import { describe, expect, it } from 'vitest';
import { redactJobConfig, redactUrl } from './redact.js';

describe('redaction of job config', () => {
  it('hides query values and user info of URLs, keeps the rest', () => {
    expect(redactUrl('https://feeds.example/x.xml?token=abc&page=2#top')).toBe(
      'https://feeds.example/x.xml?token=[redacted]&page=[redacted]#top',
    );
    expect(redactUrl('https://u:p@api.example/v1')).toBe('https://api.example/v1');
    expect(redactUrl('https://api.example/v1')).toBe('https://api.example/v1');
    expect(redactUrl('not a url ?token=1')).toBe('not a url ?token=1');
  });

  it('hides header values, secret-named keys and URL queries anywhere in a config', () => {
    expect(
      redactJobConfig({
        url: 'https://api.example/items?key=k1',
        headers: { Accept: 'application/json', Authorization: 'Bearer t' },
        nested: { client_secret: 's', list: ['https://x.example/?a=1'] },
        max_per_tick: 5,
      }),
    ).toEqual({
      url: 'https://api.example/items?key=[redacted]',
      headers: { Accept: '[redacted]', Authorization: '[redacted]' },
      nested: { client_secret: '[redacted]', list: ['https://x.example/?a=[redacted]'] },
      max_per_tick: 5,
    });
  });
});
