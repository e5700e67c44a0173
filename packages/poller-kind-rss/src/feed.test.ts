import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ID_MAX_CHARS, SUMMARY_MAX_CHARS, parseFeed, type ParsedFeed, type ParseFeedResult } from './feed.js';
import { orderOldestFirst } from './order.js';

const BASE = 'https://feeds.example.com/path/feed.xml';

function sample(name: string): Buffer {
  return readFileSync(fileURLToPath(new URL(`../testdata/samples/${name}`, import.meta.url)));
}

function parsed(result: ParseFeedResult): ParsedFeed {
  if (!result.ok) throw new Error(`expected ok, got ${result.code}: ${result.error}`);
  return result.feed;
}

function parseText(text: string, baseUrl = BASE, contentType?: string): ParseFeedResult {
  return parseFeed(Buffer.from(text, 'utf8'), { baseUrl, contentType });
}

describe('parseFeed: hand-written samples', () => {
  it('falls back from guid to link to a content hash when guids are missing', () => {
    const feed = parsed(parseFeed(sample('missing-guids.xml'), { baseUrl: BASE }));
    const [withLink, titleOnly, summaryOnly] = feed.items;
    expect(withLink?.id).toBe('https://news.example.com/posts/1');
    expect(titleOnly?.id).toMatch(/^h:[0-9a-f]{64}$/);
    expect(summaryOnly?.id).toMatch(/^h:[0-9a-f]{64}$/);
    expect(titleOnly?.id).not.toBe(summaryOnly?.id);
    // The summary stands in for a missing title.
    expect(summaryOnly?.title).toBe('No title either: the summary stands in for it.');
    // Stable across parses, and independent of the position in the feed.
    const again = parsed(parseFeed(sample('missing-guids.xml'), { baseUrl: BASE }));
    expect(again.items.map((item) => item.id)).toEqual(feed.items.map((item) => item.id));
    const alone = parsed(
      parseText(
        '<rss version="2.0"><channel><item><title>Neither guid nor link</title>' +
          '<description>Only a title, a date and this text.</description>' +
          '<pubDate>Mon, 01 Jan 2024 10:00:00 GMT</pubDate></item></channel></rss>',
      ),
    );
    expect(alone.items[0]?.id).toBe(titleOnly?.id);
  });

  it('keeps items without dates and orders them by reversed feed order', () => {
    const feed = parsed(parseFeed(sample('no-dates.xml'), { baseUrl: BASE }));
    expect(feed.items.map((item) => item.published)).toEqual([undefined, undefined, undefined]);
    expect(orderOldestFirst(feed.items).map((item) => item.id)).toEqual(['a', 'b', 'c']);
  });

  it('orders a feed in random order by date, oldest first', () => {
    const feed = parsed(parseFeed(sample('random-order.xml'), { baseUrl: BASE }));
    expect(orderOldestFirst(feed.items).map((item) => item.title)).toEqual([
      'One',
      'Two',
      'Three',
      'Four',
      'Five',
    ]);
    // Atom: published wins over updated, time zones are applied.
    expect(feed.items.find((item) => item.id === 'urn:e:5')?.published?.toISOString()).toBe(
      '2024-03-05T00:00:00.000Z',
    );
  });

  it('returns a clean error for malformed XML', () => {
    const result = parseFeed(sample('bad-xml.xml'), { baseUrl: BASE });
    expect(result).toMatchObject({ ok: false, code: 'FEED_MALFORMED' });
  });

  it('never expands DTD entities (billion laughs, external entities)', () => {
    const started = performance.now();
    const feed = parsed(parseFeed(sample('entity-bomb.xml'), { baseUrl: BASE }));
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(feed.title).toBe('Bomb &lol9;');
    expect(feed.items[0]?.title).toBe('Laughs: &lol9;');
    expect(feed.items[0]?.summary).toBe('Secret: &xxe;');
    // A relative permalink guid is not turned into a link.
    expect(feed.items[0]?.link).toBeUndefined();
  });

  it('decodes an ISO-8859-1 body declared in the XML prolog', () => {
    const result = parseFeed(sample('iso-8859-1.xml'), { baseUrl: BASE });
    const feed = parsed(result);
    expect(feed.title).toBe('Café crème');
    expect(feed.items[0]?.title).toBe('Grüße aus Köln £ ½');
    expect(feed.items[0]?.summary).toBe('Señor José');
    expect(result.ok && result.encoding).toBe('windows-1252'); // WHATWG's name for the iso-8859-1 label
  });

  it('decodes an ISO-8859-1 body declared only in the HTTP Content-Type', () => {
    const bytes = sample('iso-8859-1-no-declaration.xml');
    const feed = parsed(
      parseFeed(bytes, { baseUrl: BASE, contentType: 'application/rss+xml; charset=ISO-8859-1' }),
    );
    expect(feed.items[0]?.title).toBe('Grüße aus Köln £ ½');
    // Without any declaration the invalid UTF-8 is still read as windows-1252 rather than U+FFFD.
    expect(parsed(parseFeed(bytes, { baseUrl: BASE })).items[0]?.title).toBe('Grüße aus Köln £ ½');
  });

  it('skips a UTF-8 byte order mark', () => {
    const result = parseFeed(sample('utf8-bom.xml'), { baseUrl: BASE });
    const feed = parsed(result);
    expect(feed.format).toBe('atom');
    expect(feed.title).toBe('BOM ✓ 日本語');
    expect(feed.items[0]?.title).toBe('Été 🌞');
    // The BOM beats a contradicting HTTP charset.
    const withHeader = parseFeed(sample('utf8-bom.xml'), {
      baseUrl: BASE,
      contentType: 'text/xml; charset=iso-8859-1',
    });
    expect(parsed(withHeader).items[0]?.title).toBe('Été 🌞');
  });

  it('reads JSON Feed: numeric ids, relative urls, plain-text titles, html content', () => {
    const feed = parsed(parseFeed(sample('json-feed.json'), { baseUrl: BASE }));
    expect(feed.format).toBe('json');
    expect(feed.title).toBe('JSON & friends');
    const [second, first, anonymous] = feed.items;
    expect(second).toEqual({
      id: '2',
      title: 'Second <not a tag>',
      link: 'https://json.example.com/blog/posts/2',
      published: new Date('2024-04-02T08:00:00.000Z'),
      summary: 'Hello there & welcome',
      author: 'Feed Author',
    });
    expect(first?.author).toBe('Item Author');
    expect(first?.summary).toBe('A plain-text summary');
    expect(anonymous?.id).toMatch(/^h:[0-9a-f]{64}$/);
    expect(anonymous?.link).toBeUndefined();
  });

  it('resolves relative links against entry and feed xml:base and keeps only http(s) links', () => {
    const feed = parsed(parseFeed(sample('xml-base.xml'), { baseUrl: BASE }));
    expect(feed.title).toBe('Relative & based');
    expect(feed.items.map((item) => item.link)).toEqual([
      'https://blog.example.org/archive/2024/first.html',
      'https://blog.example.org/posts/second.html?a=1&b=2',
      undefined,
    ]);
  });

  it('keeps items that share a guid distinct, with stable suffixes; drops verbatim repeats', () => {
    const feed = parsed(parseFeed(sample('duplicate-guids.xml'), { baseUrl: BASE }));
    const ids = feed.items.map((item) => item.id);
    expect(feed.items.map((item) => item.title)).toEqual(['Newest', 'Middle', 'Oldest']);
    expect(ids[0]).toBe('same');
    expect(ids[1]).toMatch(/^same#[0-9a-f]{16}$/);
    expect(ids[2]).toMatch(/^same#[0-9a-f]{16}$/);
    expect(new Set(ids).size).toBe(3);
    // The suffix comes from the content, not the position: the same item gets the same id in another feed.
    const reordered = parsed(
      parseText(
        '<rss version="2.0"><channel>' +
          '<item><title>Newest</title><guid isPermaLink="false">same</guid><link>https://dup.example.com/3</link></item>' +
          '<item><title>Unrelated</title><guid isPermaLink="false">same</guid></item>' +
          '<item><title>Middle</title><guid isPermaLink="false">same</guid><link>https://dup.example.com/2</link></item>' +
          '</channel></rss>',
      ),
    );
    expect(reordered.items[2]?.id).toBe(ids[1]);
  });

  it('refuses an HTML page, even one that mentions feed elements', () => {
    const result = parseFeed(sample('html-page.html'), { baseUrl: BASE });
    expect(result).toMatchObject({ ok: false, code: 'FEED_HTML_PAGE' });
    expect(result.ok || result.error).toContain('HTML page');
  });
});

describe('parseFeed: formats', () => {
  it('reads RSS 0.91', () => {
    const feed = parsed(
      parseText(
        '<?xml version="1.0"?><!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" ' +
          '"http://my.netscape.com/publish/formats/rss-0.91.dtd"><rss version="0.91"><channel>' +
          '<title>Old &amp; gold</title><link>http://old.example.com/</link>' +
          '<item><title>Story</title><link>http://old.example.com/story</link><description>Text</description></item>' +
          '</channel></rss>',
      ),
    );
    expect(feed).toEqual({
      format: 'rss',
      title: 'Old & gold',
      items: [
        {
          id: 'http://old.example.com/story',
          title: 'Story',
          link: 'http://old.example.com/story',
          summary: 'Text',
        },
      ],
    });
  });

  it('reads RSS 1.0 (RDF) with Dublin Core dates and creators', () => {
    const feed = parsed(
      parseText(
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/" ' +
          'xmlns:dc="http://purl.org/dc/elements/1.1/"><channel rdf:about="http://r.example.com/">' +
          '<title>RDF</title><link>http://r.example.com/</link></channel>' +
          '<item rdf:about="http://r.example.com/1"><title>One</title><link>http://r.example.com/1</link>' +
          '<dc:date>2002-09-28T20:01:19+01:00</dc:date><dc:creator>Simon</dc:creator></item></rdf:RDF>',
      ),
    );
    expect(feed.format).toBe('rdf');
    expect(feed.items[0]).toEqual({
      id: 'http://r.example.com/1',
      title: 'One',
      link: 'http://r.example.com/1',
      published: new Date('2002-09-28T19:01:19Z'),
      author: 'Simon',
    });
  });

  it('reads RSS 2.0 with double-escaped titles, CDATA, content:encoded and an e-mail author', () => {
    const feed = parsed(
      parseText(
        '<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>' +
          '<title>AT&amp;amp;T &lt;b&gt;news&lt;/b&gt;</title><link>https://site.example.com/blog/</link>' +
          '<item><title><![CDATA[Tom & Jerry <em>return</em>]]></title><link>post/1</link>' +
          '<content:encoded><![CDATA[<p>Hello&nbsp;<b>world</b></p><script>alert(1)</script>]]></content:encoded>' +
          '<author>jane@example.com (Jane Doe)</author><pubDate>Sat, 07 Sep 2002 00:00:01 GMT</pubDate></item>' +
          '</channel></rss>',
      ),
    );
    expect(feed.title).toBe('AT&T news');
    expect(feed.items[0]).toEqual({
      // Relative RSS links resolve against the channel <link> first.
      id: 'https://site.example.com/blog/post/1',
      title: 'Tom & Jerry return',
      link: 'https://site.example.com/blog/post/1',
      published: new Date('2002-09-07T00:00:01Z'),
      summary: 'Hello world',
      author: 'Jane Doe',
    });
  });

  it('reads Atom 0.3 and Atom 1.0 text constructs (text, html, xhtml)', () => {
    const atom03 = parsed(
      parseText(
        '<feed version="0.3" xmlns="http://purl.org/atom/ns#"><title>Old Atom</title><entry>' +
          '<id>tag:a,2003:1</id><title type="text/html" mode="escaped">&lt;b&gt;Bold&lt;/b&gt; move</title>' +
          '<issued>2003-12-13T08:29:29-04:00</issued><link rel="alternate" type="text/html" href="http://a.example.com/1"/>' +
          '</entry></feed>',
      ),
    );
    expect(atom03.items[0]).toMatchObject({
      id: 'tag:a,2003:1',
      title: 'Bold move',
      link: 'http://a.example.com/1',
    });
    const atom10 = parsed(
      parseText(
        '<feed xmlns="http://www.w3.org/2005/Atom"><title type="text">A &lt;tag&gt; in text</title>' +
          '<author><name>Feed Person</name></author>' +
          '<entry><id>urn:1</id><title type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">X <i>&amp;</i> Y</div></title>' +
          '<summary type="html">&lt;p&gt;Para&lt;/p&gt;</summary><updated>2005-07-31T12:29:29Z</updated></entry></feed>',
      ),
    );
    expect(atom10.title).toBe('A <tag> in text');
    expect(atom10.items[0]).toEqual({
      id: 'urn:1',
      title: 'X & Y',
      published: new Date('2005-07-31T12:29:29Z'),
      summary: 'Para',
      author: 'Feed Person',
    });
  });

  it('accepts an unescaped ampersand (lenient parsing)', () => {
    const feed = parsed(
      parseText(
        '<rss version="2.0"><channel><item><title>A & B</title><guid>x</guid></item></channel></rss>',
      ),
    );
    expect(feed.items[0]?.title).toBe('A & B');
  });

  it('treats an empty but well-formed feed as a feed with no items', () => {
    expect(parsed(parseText('<feed xmlns="http://www.w3.org/2005/Atom"></feed>')).items).toEqual([]);
    expect(parsed(parseText('<rss version="2.0"><channel><title>T</title></channel></rss>'))).toEqual({
      format: 'rss',
      title: 'T',
      items: [],
    });
  });

  it('cuts long summaries and replaces over-long guids by a hash', () => {
    const longGuid = 'g'.repeat(ID_MAX_CHARS + 1);
    const feed = parsed(
      parseText(
        `<rss version="2.0"><channel><item><title>T</title><guid>${longGuid}</guid>` +
          `<description>${'word '.repeat(1000)}</description></item></channel></rss>`,
      ),
    );
    expect(feed.items[0]?.id).toMatch(/^h:[0-9a-f]{64}$/);
    expect(Array.from(feed.items[0]?.summary ?? '').length).toBeLessThanOrEqual(SUMMARY_MAX_CHARS);
    expect(feed.items[0]?.summary?.endsWith('…')).toBe(true);
  });
});

describe('parseFeed: errors never throw', () => {
  it.each([
    ['empty body', '', 'FEED_EMPTY'],
    ['whitespace', '  \n\t ', 'FEED_EMPTY'],
    ['a comment only', '<!-- nothing -->', 'FEED_EMPTY'],
    ['plain text', 'Service Unavailable', 'FEED_UNRECOGNIZED'],
    ['an unknown XML document', '<error><message>nope</message></error>', 'FEED_UNRECOGNIZED'],
    ['broken JSON', '{"version": ', 'FEED_MALFORMED'],
    ['JSON that is not a feed', '{"data": []}', 'FEED_UNRECOGNIZED'],
    ['a JSON array', '[1, 2]', 'FEED_UNRECOGNIZED'],
    [
      'an XHTML page',
      '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body/></html>',
      'FEED_HTML_PAGE',
    ],
    ['a bare HTML body', '<body><rss version="2.0"></rss></body>', 'FEED_HTML_PAGE'],
  ])('%s → %s', (_name, body, code) => {
    expect(parseText(body)).toMatchObject({ ok: false, code });
  });

  it('rejects a body that is not bytes', () => {
    const result = parseFeed('<rss/>' as unknown as Buffer, { baseUrl: BASE });
    expect(result).toMatchObject({ ok: false, code: 'FEED_BODY_INVALID' });
  });

  it('survives a bad baseUrl and missing options', () => {
    const body =
      '<rss version="2.0"><channel><item><title>T</title><link>/relative</link></item></channel></rss>';
    const item = parsed(parseText(body, 'not a url')).items[0];
    expect(item?.link).toBeUndefined();
    expect(item?.id).toMatch(/^h:[0-9a-f]{64}$/);
    const noOptions = parseFeed(Buffer.from(body), undefined as unknown as { baseUrl: string });
    expect(noOptions.ok).toBe(true);
  });

  it('stays fast on pathological input', () => {
    const bodies = [
      `<rss version="2.0"><channel><item><title>${'&lt;a'.repeat(100_000)}</title></item></channel></rss>`,
      `<rss version="2.0"><channel><item><description><![CDATA[${'<a'.repeat(200_000)}]]></description></item></channel></rss>`,
      `<rss version="2.0"><channel>${'<x>'.repeat(50_000)}${'</x>'.repeat(50_000)}</channel></rss>`,
      `<!DOCTYPE rss [${'['.repeat(100_000)}`,
      '<!--'.repeat(100_000),
      `{"version":"https://jsonfeed.org/version/1","title":"x","items":${'['.repeat(5_000)}${']'.repeat(5_000)}}`,
    ];
    for (const body of bodies) {
      const started = performance.now();
      const result = parseText(body);
      expect(performance.now() - started).toBeLessThan(3_000);
      expect(typeof result.ok).toBe('boolean');
    }
  });

  it('never throws on random bytes or truncated feeds', () => {
    const feed = sample('json-feed.json').toString('utf8');
    const xml = sample('xml-base.xml').toString('utf8');
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    for (let round = 0; round < 200; round++) {
      const bytes = Buffer.from(
        Array.from({ length: Math.floor(random() * 300) }, () => Math.floor(random() * 256)),
      );
      expect(typeof parseFeed(bytes, { baseUrl: BASE }).ok).toBe('boolean');
      const source = round % 2 === 0 ? feed : xml;
      const truncated = source.slice(0, Math.floor(random() * source.length));
      expect(typeof parseText(truncated).ok).toBe('boolean');
    }
  });
});
