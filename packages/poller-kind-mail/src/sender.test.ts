import { describe, expect, it } from 'vitest';
import { normalizeAllowlistPattern, senderAddress, senderAllowed } from './sender.js';

describe('sender address', () => {
  it.each([
    ['a@example.com', 'a@example.com'],
    ['Ana <Ana@Example.COM>', 'ana@example.com'],
    ['"Pérez, Ana" <ana@example.com>', 'ana@example.com'],
    ['"boss@corp.com" <evil@x.com>', 'evil@x.com'],
    ['boss@corp.com <evil@x.com>', 'evil@x.com'],
    ['evil@x.com (boss@corp.com)', 'evil@x.com'],
    ['"<boss@corp.com>" <evil@x.com>', 'evil@x.com'],
    ['"a\\" <boss@corp.com>" <evil@x.com>', 'evil@x.com'],
  ])('%s -> %s', (from, addr) => {
    expect(senderAddress(from)).toBe(addr);
  });

  it.each([
    '',
    'no address',
    'a@b.com, c@d.com',
    'group: a@b.com;',
    '<a@b.com> <c@d.com>',
    'x <a@b.com',
    '<>',
  ])('refuses %j', (from) => {
    expect(senderAddress(from)).toBeNull();
  });
});

describe('sender_allowlist', () => {
  const list = ['example.com', 'Boss@Corp.com'];
  it.each([
    ['a@example.com', true],
    ['a@sub.example.com', true],
    ['A@EXAMPLE.COM', true],
    ['a@evil-example.com', false],
    ['a@example.com.evil', false],
    ['a@notexample.com', false],
    ['boss@corp.com', true],
    ['other@corp.com', false],
  ])('%s allowed: %s', (addr, ok) => {
    expect(senderAllowed(senderAddress(addr), list)).toBe(ok);
  });

  it('a display name that looks like an allowed address does not pass', () => {
    expect(senderAllowed(senderAddress('"boss@corp.com" <evil@x.com>'), list)).toBe(false);
    expect(senderAllowed(senderAddress('boss@corp.com <evil@x.com>'), list)).toBe(false);
  });

  it('an empty list allows everyone; a missing sender is refused by a non-empty list', () => {
    expect(senderAllowed('a@b.com', [])).toBe(true);
    expect(senderAllowed(null, list)).toBe(false);
  });

  it('normalises patterns and refuses junk', () => {
    expect(normalizeAllowlistPattern('@Example.com')).toBe('example.com');
    expect(normalizeAllowlistPattern('*.example.com')).toBe('example.com');
    expect(normalizeAllowlistPattern('not a domain')).toBeNull();
    expect(normalizeAllowlistPattern('a@@b')).toBeNull();
  });
});
