import { describe, expect, it } from 'vitest';
import { collapseWhitespace, decodeEntities, htmlToText, stripTags, truncateText } from './text.js';

describe('decodeEntities', () => {
  it('decodes named, decimal and hex references', () => {
    expect(
      decodeEntities('&amp; &lt;&gt; &quot;&apos; &eacute;&Eacute; &mdash; &euro; &hellip; &nbsp;'),
    ).toBe('& <> "\' éÉ — € … \u00a0');
    expect(decodeEntities('&#38; &#x26; &#X1F600; &#233;')).toBe('& & 😀 é');
  });

  it('maps C1 numeric references to windows-1252 and invalid ones to U+FFFD', () => {
    expect(decodeEntities('&#150;&#147;x&#148;&#128;')).toBe('–“x”€');
    expect(decodeEntities('&#0; &#xD800; &#x110000;')).toBe('\uFFFD \uFFFD \uFFFD');
  });

  it('leaves unknown names, bare ampersands and references without `;` alone', () => {
    expect(decodeEntities('AT&T &bogus; &amp &lol9;')).toBe('AT&T &bogus; &amp &lol9;');
  });
});

describe('stripTags / htmlToText', () => {
  it('strips tags before decoding, so escaped markup survives as text', () => {
    expect(htmlToText('<p>History of the &lt;blink&gt; tag</p>')).toBe('History of the <blink> tag');
    expect(htmlToText('Example <b>Atom</b>')).toBe('Example Atom');
  });

  it('separates block elements by a space and joins inline ones', () => {
    expect(htmlToText('<p>one</p><p>two</p>line<br/>break')).toBe('one two line break');
    expect(htmlToText('Java<b>Script</b>')).toBe('JavaScript');
  });

  it('drops comments, script and style content; keeps CDATA text', () => {
    expect(htmlToText('a<!-- hidden -->b<script>alert(1)</script>c<style>p{}</style>d<![CDATA[e]]>')).toBe(
      'ab c de',
    );
    expect(htmlToText('x<script>never closed')).toBe('x');
  });

  it('keeps a `<` that does not start a tag', () => {
    expect(stripTags('a < b and 3<4')).toBe('a < b and 3<4');
    expect(htmlToText('1 <2 > 0')).toBe('1 <2 > 0');
  });

  it('keeps the rest of the text after a tag that never closes', () => {
    expect(stripTags('text <a href="x')).toBe('text <a href="x');
  });

  it('is linear on hostile input', () => {
    const started = performance.now();
    htmlToText('<a'.repeat(300_000));
    htmlToText('<style>'.repeat(100_000));
    htmlToText('&#'.repeat(300_000));
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe('collapseWhitespace / truncateText', () => {
  it('collapses whitespace including no-break spaces and drops control characters', () => {
    expect(collapseWhitespace('  a\n\t b\u00a0\u00a0c\u0007 ')).toBe('a b c');
  });

  it('truncates on a word boundary with an ellipsis, counting code points', () => {
    expect(truncateText('short', 10)).toBe('short');
    expect(truncateText('the quick brown fox jumps', 12)).toBe('the quick…');
    const emoji = '😀'.repeat(20);
    expect(Array.from(truncateText(emoji, 10))).toHaveLength(10);
  });
});
