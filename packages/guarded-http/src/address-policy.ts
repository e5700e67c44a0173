/**
 * Address policy for untrusted URLs: an allow-list of global unicast space. Every address is
 * classified into a category; only `public` is allowed by default. `allowPrivateNetworks` lifts the
 * refusal of the categories in `PRIVATE_CATEGORIES` and nothing else (link-local and cloud metadata
 * stay blocked).
 */
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type * as IpAddr from 'ipaddr.js';

// Required, not imported: Node's `import` of a CommonJS package scans its source for named exports, and the
// memory that takes stays for the life of the process (1-3 MB of resident memory for this one, measured in
// the daemon).
const ipaddr = createRequire(import.meta.url)('ipaddr.js') as typeof IpAddr;

export type AddressCategory =
  | 'public'
  | 'loopback'
  | 'private'
  | 'uniqueLocal'
  | 'carrierGradeNat'
  | 'localhostName'
  | 'linkLocal'
  | 'metadata'
  | 'unspecified'
  | 'broadcast'
  | 'multicast'
  | 'reserved'
  | 'documentation'
  | 'benchmarking'
  | 'ipv4Mapped'
  | 'ipv4Compatible'
  | 'ipv4Translated'
  | 'nat64'
  | '6to4'
  | 'teredo'
  | 'invalid';

/** Categories that `allowPrivateNetworks: true` lifts. */
export const PRIVATE_CATEGORIES: ReadonlySet<AddressCategory> = new Set<AddressCategory>([
  'loopback',
  'private',
  'uniqueLocal',
  'carrierGradeNat',
  'localhostName',
]);

export interface AddressPolicy {
  /** Lift the refusal of loopback, RFC 1918, unique-local, CGNAT and `localhost` names. */
  allowPrivateNetworks?: boolean;
  /**
   * TEST SEAM ONLY: exact addresses treated as public whatever their category. Lets tests put a
   * "public" server on a loopback address such as 127.0.0.2. Never set this from configuration.
   */
  unsafeAllowAddresses?: readonly string[];
}

export interface AddressVerdict {
  allowed: boolean;
  /** Normalised address (dotted IPv4, compressed IPv6 without brackets) or the host name. */
  address: string;
  category: AddressCategory;
  /** Human-readable reason, e.g. `loopback (127.0.0.0/8)`. */
  reason: string;
}

type V4 = IpAddr.IPv4;
type V6 = IpAddr.IPv6;

interface Rule<T> {
  net: [T, number];
  cidr: string;
  category: AddressCategory;
}

function rules4(list: [string, AddressCategory][]): Rule<V4>[] {
  return list.map(([cidr, category]) => ({ net: ipaddr.IPv4.parseCIDR(cidr), cidr, category }));
}
function rules6(list: [string, AddressCategory][]): Rule<V6>[] {
  return list.map(([cidr, category]) => ({ net: ipaddr.IPv6.parseCIDR(cidr), cidr, category }));
}

// Cloud metadata endpoints: refused even with allowPrivateNetworks (AWS/GCP/Azure/Oracle
// 169.254.169.254, AWS ECS and EKS agents, Alibaba 100.100.100.200, AWS IPv6 fd00:ec2::254).
const METADATA = new Set([
  '169.254.169.254',
  '169.254.170.2',
  '169.254.170.23',
  '100.100.100.200',
  'fd00:ec2::254',
  'fd00:ec2::23',
]);

// First match wins, so narrower ranges come before the ranges that contain them.
const V4_RULES = rules4([
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrierGradeNat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'linkLocal'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
]);

// Ranges whose address embeds an IPv4 address; the embedded one is reported in the reason.
type Embedding = 'ipv4Mapped' | 'ipv4Translated' | 'ipv4Compatible' | 'nat64' | '6to4' | 'teredo';

const V6_RULES = rules6([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::ffff:0:0/96', 'ipv4Mapped'],
  ['::ffff:0:0:0/96', 'ipv4Translated'],
  ['::/96', 'ipv4Compatible'],
  ['64:ff9b::/96', 'nat64'],
  ['64:ff9b:1::/48', 'nat64'],
  ['100::/64', 'reserved'],
  ['2001:db8::/32', 'documentation'],
  ['2001::/32', 'teredo'],
  ['2002::/16', '6to4'],
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'uniqueLocal'],
  ['fe80::/10', 'linkLocal'],
  ['fec0::/10', 'reserved'],
  ['ff00::/8', 'multicast'],
]);

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

const EMBEDDED: ReadonlySet<AddressCategory> = new Set<AddressCategory>([
  'ipv4Mapped',
  'ipv4Translated',
  'ipv4Compatible',
  'nat64',
  '6to4',
  'teredo',
]);

const EMBEDDING_LABEL: Record<Embedding, string> = {
  ipv4Mapped: 'IPv4-mapped IPv6',
  ipv4Translated: 'IPv4-translated IPv6',
  ipv4Compatible: 'IPv4-compatible IPv6',
  nat64: 'NAT64',
  '6to4': '6to4',
  teredo: 'Teredo',
};

function v4FromBytes(bytes: number[]): V4 {
  return new ipaddr.IPv4(bytes.map((b) => b & 0xff));
}

function embeddedV4(addr: V6, kind: Embedding): V4 {
  const p = addr.parts;
  const hex = (i: number): number[] => [(p[i] ?? 0) >> 8, (p[i] ?? 0) & 0xff];
  // 6to4 carries the site's IPv4 in bits 16..47; Teredo carries the client's IPv4 inverted in the
  // last 32 bits; every other embedding uses the last 32 bits as they are.
  if (kind === '6to4') return v4FromBytes([...hex(1), ...hex(2)]);
  if (kind === 'teredo') return v4FromBytes([...hex(6), ...hex(7)].map((b) => ~b));
  return v4FromBytes([...hex(6), ...hex(7)]);
}

interface Classification {
  category: AddressCategory;
  reason: string;
}

function classify4(addr: V4): Classification {
  const text = addr.toString();
  if (METADATA.has(text)) return { category: 'metadata', reason: 'cloud metadata endpoint' };
  for (const rule of V4_RULES) {
    if (addr.match(rule.net)) return { category: rule.category, reason: `${rule.category} (${rule.cidr})` };
  }
  // Anything else ipaddr.js knows as special (AS112, AMT) is not a normal destination either.
  const range = addr.range();
  if (range !== 'unicast') return { category: 'reserved', reason: `reserved (${range})` };
  return { category: 'public', reason: 'global unicast' };
}

function classify6(addr: V6): Classification {
  const text = addr.toString();
  if (METADATA.has(text)) return { category: 'metadata', reason: 'cloud metadata endpoint' };
  for (const rule of V6_RULES) {
    if (!addr.match(rule.net)) continue;
    if (EMBEDDED.has(rule.category)) {
      const kind = rule.category as Embedding;
      const inner = embeddedV4(addr, kind);
      const innerClass = classify4(inner);
      const label = EMBEDDING_LABEL[kind];
      // A mapped address is the IPv4 address itself to the socket layer, so it takes the IPv4
      // category (and allowPrivateNetworks applies to it the same way). Other embeddings go through
      // a translator or tunnel and are refused whatever they embed.
      if (kind === 'ipv4Mapped' && innerClass.category !== 'public') {
        return {
          category: innerClass.category,
          reason: `${label} form of ${inner.toString()}: ${innerClass.reason}`,
        };
      }
      return {
        category: kind,
        reason: `${label} (${rule.cidr}) embedding ${inner.toString()} (${innerClass.category})`,
      };
    }
    return { category: rule.category, reason: `${rule.category} (${rule.cidr})` };
  }
  if (!addr.match(GLOBAL_UNICAST_V6))
    return { category: 'reserved', reason: 'outside global unicast 2000::/3' };
  const range = addr.range();
  if (range !== 'unicast') return { category: 'reserved', reason: `reserved (${range})` };
  return { category: 'public', reason: 'global unicast' };
}

/**
 * Turns an address literal into ipaddr form. Accepts brackets, an IPv6 zone id, and the legacy
 * IPv4 forms WHATWG URL understands (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`).
 */
function parseLiteral(input: string): V4 | V6 | undefined {
  let s = input.trim();
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  const zone = s.indexOf('%');
  if (zone !== -1 && s.includes(':')) s = s.slice(0, zone);
  if (isIP(s) === 4) return ipaddr.IPv4.parse(s);
  if (isIP(s) === 6) {
    // ipaddr.js reads `::127.0.0.1` as IPv4-mapped; WHATWG URL renders the true hextets first.
    return ipaddr.IPv6.parse(new URL(`http://[${s}]/`).hostname.slice(1, -1));
  }
  if (s === '' || s.includes(':') || /[^0-9a-fA-FxX.]/.test(s)) return undefined;
  try {
    const host = new URL(`http://${s}/`).hostname;
    return isIP(host) === 4 ? ipaddr.IPv4.parse(host) : undefined;
  } catch {
    return undefined;
  }
}

function normalise(addr: V4 | V6): string {
  return addr.kind() === 'ipv4' ? addr.toString() : (addr as V6).toRFC5952String();
}

function decide(address: string, c: Classification, policy: AddressPolicy): AddressVerdict {
  if (c.category === 'public') return { allowed: true, address, category: c.category, reason: c.reason };
  if (policy.unsafeAllowAddresses?.includes(address)) {
    return {
      allowed: true,
      address,
      category: c.category,
      reason: `${c.reason}; allowed by unsafeAllowAddresses`,
    };
  }
  if (policy.allowPrivateNetworks === true && PRIVATE_CATEGORIES.has(c.category)) {
    return {
      allowed: true,
      address,
      category: c.category,
      reason: `${c.reason}; allowed by allowPrivateNetworks`,
    };
  }
  return { allowed: false, address, category: c.category, reason: c.reason };
}

/** Classifies one IP address literal against the policy. A non-address input is `invalid` (refused). */
export function checkAddress(ip: string, policy: AddressPolicy = {}): AddressVerdict {
  const parsed = typeof ip === 'string' ? parseLiteral(ip) : undefined;
  if (parsed === undefined) {
    return { allowed: false, address: String(ip), category: 'invalid', reason: 'not an IP address' };
  }
  const c = parsed.kind() === 'ipv4' ? classify4(parsed as V4) : classify6(parsed as V6);
  return decide(normalise(parsed), c, policy);
}

/** True when `checkAddress` refuses the address. */
export function isBlockedAddress(ip: string, policy: AddressPolicy = {}): boolean {
  return !checkAddress(ip, policy).allowed;
}

/**
 * Checks a URL host (as `URL.hostname` gives it: lower case, brackets around IPv6). Literal
 * addresses are classified; `localhost` and `*.localhost` names (RFC 6761) are refused by name;
 * any other name is allowed here and its resolved addresses are checked at connect time.
 */
export function checkHostname(hostname: string, policy: AddressPolicy = {}): AddressVerdict {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  if (isIP(bare) !== 0) return checkAddress(bare, policy);
  const name = bare.toLowerCase().replace(/\.+$/, '');
  if (name === '') return { allowed: false, address: hostname, category: 'invalid', reason: 'empty host' };
  if (name === 'localhost' || name.endsWith('.localhost')) {
    return decide(name, { category: 'localhostName', reason: 'localhost name (RFC 6761)' }, policy);
  }
  return {
    allowed: true,
    address: name,
    category: 'public',
    reason: 'host name; resolved addresses are checked',
  };
}
