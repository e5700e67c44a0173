import { describe, expect, it } from 'vitest';
import { urlProblems } from './url-problems.js';

describe('urlProblems', () => {
  it.each([
    ['https://feeds.example/x', false, []],
    ['ftp://feeds.example/x', false, ['f must use http or https, not ftp']],
    ['not a url', false, ['f is not a valid URL; write it as https://host/path']],
  ])('urlProblems(%s)', (raw, allow, problems) => {
    expect(urlProblems('f', raw, allow)).toEqual(problems);
  });

  it('refuses literal private hosts unless allowed, and never-allowed ranges always', () => {
    expect(urlProblems('url', 'http://127.0.0.1/x', false)[0]).toMatch(
      /private or loopback.*allow_private_networks: true/,
    );
    expect(urlProblems('url', 'http://localhost/x', false)[0]).toMatch(/private or loopback/);
    expect(urlProblems('url', 'http://10.1.2.3/x', true)).toEqual([]);
    expect(urlProblems('url', 'http://169.254.169.254/latest', true)[0]).toMatch(/never allowed/);
    expect(urlProblems('url', 'https://user:pw@host.example/', false)[0]).toMatch(/user:password@/);
  });
});
