import { describe, expect, it } from 'vitest';
import {
  decodeBase64Url,
  decodeCharset,
  decodeEntities,
  decodeHeaderWords,
  decodeQuotedPrintable,
  htmlToText,
} from './text.js';

describe('mail text decoding', () => {
  it('decodes numeric and named entities, leaving unknown ones', () => {
    expect(decodeEntities('It&#39;s &amp; &quot;ok&quot; &#x1F4DE; caf&eacute;x &bogus;')).toBe(
      'It\'s & "ok" 📞 caféx &bogus;',
    );
    expect(decodeEntities('&#0; &#xD800;')).toBe('\ufffd \ufffd');
  });

  it('decodes base64url with and without padding', () => {
    const s = 'Nueva solicitud — teléfono ✓?>';
    expect(decodeBase64Url(Buffer.from(s).toString('base64url')).toString('utf8')).toBe(s);
    expect(decodeBase64Url(Buffer.from(s).toString('base64')).toString('utf8')).toBe(s);
  });

  it('decodes quoted-printable with soft line breaks and UTF-8 bytes', () => {
    expect(decodeQuotedPrintable('Caf=C3=A9 =3D ok=\r\n tail').toString('utf8')).toBe('Café = ok tail');
  });

  it('decodes RFC 2047 words (B and Q, several charsets) and joins adjacent words', () => {
    expect(decodeHeaderWords('=?UTF-8?B?8J+TniBOdWV2YQ==?= =?UTF-8?Q?_solicitud_=E2=80=94?=')).toBe(
      '📞 Nueva solicitud —',
    );
    expect(decodeHeaderWords('=?ISO-8859-1?Q?Caf=E9?= <a@b.com>')).toBe('Café <a@b.com>');
    expect(decodeHeaderWords('plain subject')).toBe('plain subject');
  });

  it('decodes bytes by charset; valid UTF-8 wins; unknown labels fall back to windows-1252', () => {
    expect(decodeCharset(Buffer.from('Año', 'latin1'), 'iso-8859-1')).toBe('Año');
    expect(decodeCharset(Buffer.from('Año', 'utf8'), 'iso-8859-1')).toBe('Año');
    expect(decodeCharset(Buffer.from([0x82, 0xa0]), 'shift_jis')).toBe('あ');
    expect(decodeCharset(Buffer.from([0x41, 0xe9]), 'x-unknown')).toBe('Aé');
  });

  it('turns HTML into text: scripts dropped, breaks kept, entities decoded', () => {
    expect(
      htmlToText(
        '<html><head><style>p{}</style></head><p>Hola&nbsp;mundo</p><script>x()</script><br>Tel: 555&#45;1234</html>',
      ),
    ).toBe('Hola\u00a0mundo\n\nTel: 555-1234');
  });
});
