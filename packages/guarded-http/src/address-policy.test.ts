import { describe, expect, it } from 'vitest';
import { checkAddress, checkHostname, isBlockedAddress, type AddressCategory } from './address-policy.js';

describe('checkAddress', () => {
  const blocked: [string, AddressCategory][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['127.1', 'loopback'],
    ['2130706433', 'loopback'],
    ['0x7f000001', 'loopback'],
    ['017700000001', 'loopback'],
    ['0177.0.0.1', 'loopback'],
    ['0x7f.1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['169.254.1.1', 'linkLocal'],
    ['169.254.169.254', 'metadata'],
    ['2852039166', 'metadata'],
    ['0xa9fea9fe', 'metadata'],
    ['0251.0376.0251.0376', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['192.31.196.1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['::FFFF:127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:8.8.8.8', 'ipv4Mapped'],
    ['::ffff:0:7f00:1', 'ipv4Translated'],
    ['::7f00:1', 'ipv4Compatible'],
    ['::127.0.0.1', 'ipv4Compatible'],
    ['64:ff9b::7f00:1', 'nat64'],
    ['64:ff9b::8.8.8.8', 'nat64'],
    ['64:ff9b:1::a00:1', 'nat64'],
    ['2002:7f00:1::', '6to4'],
    ['2002:0808:0808::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'teredo'],
    ['fc00::1', 'uniqueLocal'],
    ['fd00::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'metadata'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['febf::1', 'linkLocal'],
    ['fec0::1', 'reserved'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['100::1', 'reserved'],
    ['2001:2::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['1234::1', 'reserved'],
  ];

  it.each(blocked)('refuses %s as %s', (ip, category) => {
    const v = checkAddress(ip);
    expect(v.category).toBe(category);
    expect(v.allowed).toBe(false);
    expect(isBlockedAddress(ip)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '2a00:1450::1',
  ])('allows global unicast %s', (ip) => {
    const v = checkAddress(ip);
    expect(v).toMatchObject({ allowed: true, category: 'public' });
    expect(isBlockedAddress(ip)).toBe(false);
  });

  it('reports the address embedded in transition forms', () => {
    expect(checkAddress('2002:7f00:1::').reason).toContain('127.0.0.1 (loopback)');
    expect(checkAddress('64:ff9b::a9fe:a9fe').reason).toContain('169.254.169.254 (metadata)');
    expect(checkAddress('2001:0:4136:e378:8000:63bf:80ff:fffe').reason).toContain('127.0.0.1');
    expect(checkAddress('::ffff:7f00:1').reason).toContain('IPv4-mapped IPv6 form of 127.0.0.1');
  });

  it('normalises the address it reports', () => {
    expect(checkAddress('0x7f.1').address).toBe('127.0.0.1');
    expect(checkAddress('[0:0:0:0:0:0:0:1]').address).toBe('::1');
  });

  it.each(['', 'example.com', '1.2.3.4.5', '999.1.1.1', ':::1', 'localhost'])(
    'treats %j as invalid',
    (input) => {
      expect(checkAddress(input)).toMatchObject({ allowed: false, category: 'invalid' });
    },
  );

  it('never throws on non-string input', () => {
    expect(checkAddress(undefined as unknown as string).allowed).toBe(false);
    expect(checkAddress(42 as unknown as string).allowed).toBe(false);
  });

  describe('allowPrivateNetworks', () => {
    const policy = { allowPrivateNetworks: true };
    it.each([
      '127.0.0.1',
      '::1',
      '10.0.0.1',
      '172.20.1.1',
      '192.168.1.1',
      'fd12::1',
      '100.64.0.1',
      '::ffff:127.0.0.1',
    ])('lifts %s', (ip) => {
      expect(checkAddress(ip, policy).allowed).toBe(true);
    });
    it.each([
      '169.254.169.254',
      '169.254.1.1',
      'fe80::1',
      'fd00:ec2::254',
      '100.100.100.200',
      '0.0.0.0',
      '::',
      '224.0.0.1',
      '255.255.255.255',
      '2002:7f00:1::',
      '64:ff9b::7f00:1',
      '::7f00:1',
      '240.0.0.1',
    ])('still refuses %s', (ip) => {
      expect(checkAddress(ip, policy).allowed).toBe(false);
    });
  });

  it('unsafeAllowAddresses allows exactly the listed addresses', () => {
    const policy = { unsafeAllowAddresses: ['127.0.0.2'] };
    expect(checkAddress('127.0.0.2', policy).allowed).toBe(true);
    expect(checkAddress('127.0.0.1', policy).allowed).toBe(false);
    expect(checkAddress('127.0.0.3', policy).allowed).toBe(false);
  });
});

describe('checkHostname', () => {
  it.each(['localhost', 'LOCALHOST', 'localhost.', 'foo.localhost', 'a.b.localhost.'])(
    'refuses %s by name',
    (h) => {
      expect(checkHostname(h)).toMatchObject({ allowed: false, category: 'localhostName' });
      expect(checkHostname(h, { allowPrivateNetworks: true }).allowed).toBe(true);
    },
  );

  it('classifies bracketed and dotted literals', () => {
    expect(checkHostname('[::1]').category).toBe('loopback');
    expect(checkHostname('[::ffff:7f00:1]').category).toBe('loopback');
    expect(checkHostname('10.0.0.1').category).toBe('private');
  });

  it('lets ordinary names through to resolution', () => {
    expect(checkHostname('example.com')).toMatchObject({ allowed: true, category: 'public' });
    expect(checkHostname('notlocalhost.com').allowed).toBe(true);
    expect(checkHostname('').allowed).toBe(false);
  });
});
