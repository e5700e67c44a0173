// Runs parseFeed over the feedparser test corpus (testdata/feedparser, MIT, see its LICENSE).
// Each file starts with a comment holding `Description:`, `Expect:` (a Python expression) and sometimes
// `Header:` lines (HTTP headers the file is served with). We check two things:
//   1. every file: parseFeed returns (never throws) within a time bound;
//   2. files whose Expect line has the simple form `entries[0]['title'|'link'|'id'] == '<string>'`: our item 0
//      has that value. Titles also match when they equal the expected value flattened to text, since our
//      titles are plain text by design (feedparser keeps sanitised HTML).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseFeed } from './feed.js';
import { htmlToText } from './text.js';

const CORPUS = fileURLToPath(new URL('../testdata/feedparser/', import.meta.url));
const PER_FILE_LIMIT_MS = 2_000;

/** Cases where we knowingly differ from feedparser, with the reason. */
const KNOWN_DIFFERENCES: Readonly<Record<string, string>> = {
  'atom/entry_title_base64.xml':
    'Atom 0.3 mode="base64": the parser library drops the `mode` attribute (Atom 0.3 is obsolete since 2005)',
  'atom/entry_title_base64_2.xml': 'Atom 0.3 mode="base64" (see above)',
  'base/http_entry_title_base64_base_content_location.xml': 'Atom 0.3 mode="base64" (see above)',
  'base/http_entry_title_base64_base_docuri.xml': 'Atom 0.3 mode="base64" (see above)',
  'base/http_entry_id_base_content_location.xml':
    'ids are opaque: a relative Atom id is kept as written, not resolved against a URL that may change',
  'base/http_entry_id_base_docuri.xml': 'ids are opaque (see above)',
  'namespace/rss2.0NSwithModulesNoDefNS.xml':
    'RSS 2.0 elements behind a prefix (`<r:rss>` in the Userland namespace) are not understood by the parser library',
  'rss/item_image_link_conflict.xml':
    'links are normalised by the WHATWG URL parser, which lower-cases the host (`http://item.TEST/` → `http://item.test/`)',
};

/** The pass count reached when this test was written; it must not fall. */
const MIN_PASSING = 54;

interface CorpusCase {
  file: string;
  bytes: Buffer;
  contentType?: string;
  baseUrl: string;
  expect?: { field: 'title' | 'link' | 'id'; value: string };
}

function listXmlFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.xml'))
    .map((name) => join(dir, name))
    .toSorted();
}

function loadCase(path: string): CorpusCase {
  const bytes = readFileSync(path);
  const file = relative(CORPUS, path).split('\\').join('/');
  const header = bytes.subarray(0, 4096).toString('latin1');
  const contentType = /^\s*Header:\s*Content-type:\s*(.*?)\s*$/im.exec(header)?.[1];
  const contentLocation = /^\s*Header:\s*Content-Location:\s*(.*?)\s*$/im.exec(header)?.[1];
  // feedparser's own test server serves the corpus from this address.
  const baseUrl = contentLocation ?? `http://127.0.0.1:8097/tests/${file}`;
  const match = /^\s*Expect:.*?\bentries\[0\]\['(title|link|id)'\] == '([^'\\]*)'/m.exec(header);
  const result: CorpusCase = { file, bytes, baseUrl };
  if (contentType !== undefined) result.contentType = contentType;
  if (match) result.expect = { field: match[1] as 'title' | 'link' | 'id', value: match[2] as string };
  return result;
}

const cases = listXmlFiles(CORPUS).map(loadCase);

describe('feedparser corpus', () => {
  it('holds the whole corpus with its licence', () => {
    expect(cases.length).toBe(931);
    expect(readFileSync(join(CORPUS, 'LICENSE'), 'utf8')).toContain('Kurt McKee');
  });

  it('parses every file without throwing, within the time bound', () => {
    const slow: string[] = [];
    for (const corpusCase of cases) {
      const started = performance.now();
      const result = parseFeed(corpusCase.bytes, {
        contentType: corpusCase.contentType,
        baseUrl: corpusCase.baseUrl,
      });
      const elapsed = performance.now() - started;
      if (elapsed > PER_FILE_LIMIT_MS) slow.push(`${corpusCase.file} (${Math.round(elapsed)} ms)`);
      expect(typeof result.ok).toBe('boolean');
      if (!result.ok) expect(result.error.length).toBeGreaterThan(0);
    }
    expect(slow).toEqual([]);
  });

  it('matches feedparser on entries[0] title/link/id expectations, except the documented differences', () => {
    const checked = cases.filter((corpusCase) => corpusCase.expect !== undefined);
    const failures: string[] = [];
    for (const corpusCase of checked) {
      const { field, value } = corpusCase.expect as NonNullable<CorpusCase['expect']>;
      const result = parseFeed(corpusCase.bytes, {
        contentType: corpusCase.contentType,
        baseUrl: corpusCase.baseUrl,
      });
      const actual = result.ok ? result.feed.items[0]?.[field] : undefined;
      const matches = actual === value || (field === 'title' && actual === htmlToText(value));
      if (!matches) failures.push(corpusCase.file);
    }
    const passing = checked.length - failures.length;
    console.info(
      `feedparser corpus: ${passing}/${checked.length} entries[0] expectations met ` +
        `(${((100 * passing) / checked.length).toFixed(1)}%), ${failures.length} documented differences`,
    );
    expect(checked.length).toBe(62);
    // A new failure, or a known difference that went away, both need the list above to be updated.
    expect(failures.toSorted()).toEqual(Object.keys(KNOWN_DIFFERENCES).toSorted());
    expect(passing).toBeGreaterThanOrEqual(MIN_PASSING);
  });

  it('decodes every `&` test of the corpus to a plain ampersand', () => {
    const ampCases = cases.filter((corpusCase) => corpusCase.file.startsWith('amp/'));
    expect(ampCases.length).toBe(70);
    for (const corpusCase of ampCases) {
      const result = parseFeed(corpusCase.bytes, { baseUrl: corpusCase.baseUrl });
      expect(result.ok && result.feed.items[0]?.title, corpusCase.file).toBe('&');
    }
  });
});
