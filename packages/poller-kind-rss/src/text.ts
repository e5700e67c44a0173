// Text clean-up for feed fields: HTML entity decoding, tag stripping, whitespace collapsing.
// Every function here is linear in its input (no backtracking regexes over untrusted text),
// so a hostile feed cannot make parsing hang.

/** Latin-1 named entities, in code point order starting at U+00A0 (HTML 4 / HTML 5 share these). */
const LATIN1_NAMES =
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 ' +
  'acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde ' +
  'Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute ' +
  'Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde ' +
  'auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ' +
  'ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml';

/** The rest of the HTML 4 entity set (plus `apos`), as `name=codepoint`. */
const OTHER_ENTITIES =
  'quot=34 amp=38 apos=39 lt=60 gt=62 OElig=338 oelig=339 Scaron=352 scaron=353 Yuml=376 fnof=402 circ=710 ' +
  'tilde=732 Alpha=913 Beta=914 Gamma=915 Delta=916 Epsilon=917 Zeta=918 Eta=919 Theta=920 Iota=921 ' +
  'Kappa=922 Lambda=923 Mu=924 Nu=925 Xi=926 Omicron=927 Pi=928 Rho=929 Sigma=931 Tau=932 Upsilon=933 ' +
  'Phi=934 Chi=935 Psi=936 Omega=937 alpha=945 beta=946 gamma=947 delta=948 epsilon=949 zeta=950 eta=951 ' +
  'theta=952 iota=953 kappa=954 lambda=955 mu=956 nu=957 xi=958 omicron=959 pi=960 rho=961 sigmaf=962 ' +
  'sigma=963 tau=964 upsilon=965 phi=966 chi=967 psi=968 omega=969 thetasym=977 upsih=978 piv=982 ' +
  'ensp=8194 emsp=8195 thinsp=8201 zwnj=8204 zwj=8205 lrm=8206 rlm=8207 ndash=8211 mdash=8212 lsquo=8216 ' +
  'rsquo=8217 sbquo=8218 ldquo=8220 rdquo=8221 bdquo=8222 dagger=8224 Dagger=8225 bull=8226 hellip=8230 ' +
  'permil=8240 prime=8242 Prime=8243 lsaquo=8249 rsaquo=8250 oline=8254 frasl=8260 euro=8364 image=8465 ' +
  'weierp=8472 real=8476 trade=8482 alefsym=8501 larr=8592 uarr=8593 rarr=8594 darr=8595 harr=8596 ' +
  'crarr=8629 lArr=8656 uArr=8657 rArr=8658 dArr=8659 hArr=8660 forall=8704 part=8706 exist=8707 ' +
  'empty=8709 nabla=8711 isin=8712 notin=8713 ni=8715 prod=8719 sum=8721 minus=8722 lowast=8727 ' +
  'radic=8730 prop=8733 infin=8734 ang=8736 and=8743 or=8744 cap=8745 cup=8746 int=8747 there4=8756 ' +
  'sim=8764 cong=8773 asymp=8776 ne=8800 equiv=8801 le=8804 ge=8805 sub=8834 sup=8835 nsub=8836 ' +
  'sube=8838 supe=8839 oplus=8853 otimes=8855 perp=8869 sdot=8901 lceil=8968 rceil=8969 lfloor=8970 ' +
  'rfloor=8971 lang=10216 rang=10217 loz=9674 spades=9824 clubs=9827 hearts=9829 diams=9830';

const NAMED_ENTITIES: ReadonlyMap<string, string> = (() => {
  const map = new Map<string, string>();
  LATIN1_NAMES.split(' ').forEach((name, index) => map.set(name, String.fromCodePoint(0xa0 + index)));
  for (const pair of OTHER_ENTITIES.split(' ')) {
    const [name, code] = pair.split('=') as [string, string];
    map.set(name, String.fromCodePoint(Number(code)));
  }
  return map;
})();

/** HTML maps numeric references 0x80-0x9F to windows-1252 (feeds written on Windows rely on it). */
const WINDOWS_1252_C1 = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d,
  0x17d, 0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a,
  0x153, 0x9d, 0x17e, 0x178,
];

function decodeNumeric(digits: string, hex: boolean): string {
  const code = Number.parseInt(digits, hex ? 16 : 10);
  if (!Number.isFinite(code) || code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
    return '\uFFFD';
  }
  if (code >= 0x80 && code <= 0x9f) return String.fromCodePoint(WINDOWS_1252_C1[code - 0x80] ?? code);
  return String.fromCodePoint(code);
}

// Bounded quantifiers keep this linear: a reference is at most 32 characters long.
const ENTITY_RE = /&(?:#(\d{1,8})|#[xX]([0-9a-fA-F]{1,7})|([A-Za-z][A-Za-z0-9]{1,31}));/g;

/**
 * Decodes HTML character references: decimal and hex numeric references and the HTML 4 named set
 * (plus `&apos;`). Unknown names are left as they are; references need their closing `;`.
 */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY_RE, (whole, dec?: string, hex?: string, name?: string) => {
    if (dec !== undefined) return decodeNumeric(dec, false);
    if (hex !== undefined) return decodeNumeric(hex, true);
    return (name !== undefined && NAMED_ENTITIES.get(name)) || whole;
  });
}

// Tags that do not separate words; every other tag is replaced by a space.
const INLINE_TAGS = new Set([
  'a',
  'abbr',
  'b',
  'bdi',
  'bdo',
  'big',
  'cite',
  'code',
  'del',
  'dfn',
  'em',
  'font',
  'i',
  'ins',
  'kbd',
  'mark',
  'q',
  's',
  'samp',
  'small',
  'span',
  'strike',
  'strong',
  'sub',
  'sup',
  'time',
  'tt',
  'u',
  'var',
  'wbr',
]);
// Elements whose content is never text for a reader.
const SKIPPED_CONTENT_TAGS = ['script', 'style', 'template', 'noscript'];

function isTagStart(text: string, index: number): boolean {
  const next = text.charCodeAt(index + 1);
  return (
    (next >= 65 && next <= 90) || // A-Z
    (next >= 97 && next <= 122) || // a-z
    next === 47 || // '/'
    next === 33 || // '!'
    next === 63 // '?'
  );
}

function tagName(tag: string): string {
  let start = 1;
  if (tag.charCodeAt(1) === 47) start = 2;
  let end = start;
  while (end < tag.length && /[A-Za-z0-9:-]/.test(tag[end] ?? '')) end++;
  const name = tag.slice(start, end).toLowerCase();
  const colon = name.indexOf(':');
  return colon === -1 ? name : name.slice(colon + 1);
}

/**
 * Removes HTML markup, keeping the text: comments, `<script>`/`<style>` content and tags go; a `<`
 * that does not start a tag (`a < b`) stays. Entities are NOT decoded here (so `&lt;b&gt;` survives
 * as text); call {@link htmlToText} for the whole conversion.
 */
export function stripTags(html: string): string {
  if (!html.includes('<')) return html;
  const lower = html.toLowerCase();
  let out = '';
  let index = 0;
  // Once a search for a closing `>` fails, no later tag can close either: stop looking (keeps it linear).
  let noMoreClosers = false;
  while (index < html.length) {
    const open = html.indexOf('<', index);
    if (open === -1 || noMoreClosers) {
      out += html.slice(index);
      break;
    }
    out += html.slice(index, open);
    if (!isTagStart(html, open)) {
      out += '<';
      index = open + 1;
      continue;
    }
    if (html.startsWith('<!--', open)) {
      const end = html.indexOf('-->', open + 4);
      index = end === -1 ? html.length : end + 3;
      continue;
    }
    if (html.startsWith('<![CDATA[', open)) {
      const end = html.indexOf(']]>', open + 9);
      out += html.slice(open + 9, end === -1 ? html.length : end);
      index = end === -1 ? html.length : end + 3;
      continue;
    }
    const close = html.indexOf('>', open + 1);
    if (close === -1) {
      noMoreClosers = true;
      out += html.slice(open);
      break;
    }
    const tag = html.slice(open, close + 1);
    const name = tagName(tag);
    if (!INLINE_TAGS.has(name)) out += ' ';
    index = close + 1;
    if (SKIPPED_CONTENT_TAGS.includes(name) && tag.charCodeAt(1) !== 47 && !tag.endsWith('/>')) {
      const end = lower.indexOf(`</${name}`, index);
      if (end === -1) break;
      const endClose = html.indexOf('>', end);
      index = endClose === -1 ? html.length : endClose + 1;
    }
  }
  return out;
}

// Control characters other than tab/newline/carriage return: never useful in a chat message.
const CONTROL_CHARS_RE = /(?![\t\n\r])\p{Cc}/gu;

/** Collapses runs of whitespace (including no-break spaces) to one space, trims, drops control characters. */
export function collapseWhitespace(text: string): string {
  return text.replace(CONTROL_CHARS_RE, '').replace(/\s+/g, ' ').trim();
}

/** HTML fragment → plain text: tags stripped, then entities decoded, then whitespace collapsed. */
export function htmlToText(html: string): string {
  return collapseWhitespace(decodeEntities(stripTags(html)));
}

/** Plain text → clean text: only whitespace is collapsed (markup-looking characters are kept). */
export function plainText(text: string): string {
  return collapseWhitespace(text);
}

/**
 * Truncates to at most `max` characters (code points), cutting at a word boundary when one is near,
 * and appends `…` when something was cut.
 */
export function truncateText(text: string, max: number): string {
  if (text.length <= max) return text;
  // The first `max` code points lie within the first `2 * max` UTF-16 code units.
  const chars = Array.from(text.slice(0, max * 2 + 2));
  if (chars.length <= max && text.length <= max * 2 + 2) return text;
  let cut = chars.slice(0, max - 1).join('');
  const space = cut.lastIndexOf(' ');
  if (space > max * 0.6) cut = cut.slice(0, space);
  return `${cut.trimEnd()}…`;
}
