/**
 * Reads a WebDAV multistatus (RFC 4918) as a sync-collection (RFC 6578) or calendar-multiget answer
 * gives it: per response its href, status, etag and calendar data, plus the sync token. Namespace
 * prefixes are dropped (servers use any prefix). Pure.
 */

export interface DavResponse {
  href: string;
  /** Status code of the response or of its first propstat (200, 404, 507, ...). */
  status: number;
  etag?: string;
  calendarData?: string;
}

export interface Multistatus {
  responses: DavResponse[];
  syncToken?: string;
}

function unescapeXml(s: string): string {
  const cdata = /^\s*<!\[CDATA\[([\s\S]*)\]\]>\s*$/.exec(s);
  if (cdata) return cdata[1]!;
  return s
    .replace(/&#x([0-9a-f]+);/gi, (_m, h: string) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_m, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

function element(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}(?:\\s[^>]*)?>([\\s\\S]*?)</${name}>`).exec(xml);
  return m ? m[1] : undefined;
}

function statusCode(s: string | undefined): number | undefined {
  const m = s ? /HTTP\/\d(?:\.\d)?\s+(\d{3})/.exec(s) : null;
  return m ? Number(m[1]) : undefined;
}

export function parseMultistatus(xml: string): Multistatus {
  const plain = xml.replace(/<(\/?)[A-Za-z_][\w.-]*:/g, '<$1').replace(/\sxmlns(:\w+)?="[^"]*"/g, '');
  const responses: DavResponse[] = [];
  for (const m of plain.matchAll(/<response(?:\s[^>]*)?>([\s\S]*?)<\/response>/g)) {
    const body = m[1]!;
    const href = unescapeXml(element(body, 'href')?.trim() ?? '');
    const propstat = element(body, 'propstat');
    const status =
      statusCode(element(body.replace(/<propstat[\s\S]*<\/propstat>/g, ''), 'status')) ??
      statusCode(propstat ? element(propstat, 'status') : undefined) ??
      200;
    const etag = propstat ? element(propstat, 'getetag') : undefined;
    const data = propstat ? element(propstat, 'calendar-data') : undefined;
    responses.push({
      href,
      status,
      ...(etag ? { etag: unescapeXml(etag.trim()) } : {}),
      ...(data ? { calendarData: unescapeXml(data) } : {}),
    });
  }
  const token = element(plain, 'sync-token');
  return { responses, ...(token ? { syncToken: unescapeXml(token.trim()) } : {}) };
}

/** True for the RFC 6578 `DAV:valid-sync-token` precondition in an error body. */
export function isInvalidSyncToken(xml: string): boolean {
  return /<(?:[\w.-]+:)?valid-sync-token\b/.test(xml);
}
