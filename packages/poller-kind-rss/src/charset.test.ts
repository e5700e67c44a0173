import { describe, expect, it } from 'vitest';
import { charsetFromContentType, decodeBody, encodingFromXmlDeclaration } from './charset.js';

const XML = '<?xml version="1.0"?><rss><title>Grüße €</title></rss>';

function utf16(text: string, littleEndian: boolean, bom: boolean): Buffer {
  const le = Buffer.from(text, 'utf16le');
  if (!littleEndian) le.swap16();
  const mark = littleEndian ? [0xff, 0xfe] : [0xfe, 0xff];
  return bom ? Buffer.concat([Buffer.from(mark), le]) : le;
}

function utf32(text: string, littleEndian: boolean, bom: boolean): Buffer {
  const codes = Array.from(bom ? `\uFEFF${text}` : text, (char) => char.codePointAt(0) as number);
  const buffer = Buffer.alloc(codes.length * 4);
  codes.forEach((code, index) =>
    littleEndian ? buffer.writeUInt32LE(code, index * 4) : buffer.writeUInt32BE(code, index * 4),
  );
  return buffer;
}

describe('decodeBody', () => {
  it.each([
    ['UTF-16 LE with BOM', utf16(XML, true, true), 'utf-16le'],
    ['UTF-16 BE with BOM', utf16(XML, false, true), 'utf-16be'],
    ['UTF-16 LE without BOM', utf16(XML, true, false), 'utf-16le'],
    ['UTF-16 BE without BOM', utf16(XML, false, false), 'utf-16be'],
    ['UTF-32 LE with BOM', utf32(XML, true, true), 'utf-32le'],
    ['UTF-32 BE without BOM', utf32(XML, false, false), 'utf-32be'],
    ['UTF-8 with BOM', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(XML)]), 'utf-8'],
  ])('sniffs %s', (_name, bytes, encoding) => {
    const decoded = decodeBody(bytes, 'text/xml; charset=iso-8859-1');
    expect(decoded.encoding).toBe(encoding);
    expect(decoded.text).toBe(XML);
  });

  it('prefers the HTTP charset over the XML declaration', () => {
    const bytes = Buffer.from('<?xml version="1.0" encoding="utf-8"?><t>\u00e9</t>', 'latin1');
    expect(decodeBody(bytes, 'text/xml; charset="windows-1252"')).toEqual({
      text: '<?xml version="1.0" encoding="utf-8"?><t>é</t>',
      encoding: 'windows-1252',
    });
  });

  it('uses the XML declaration when there is no HTTP charset', () => {
    const bytes = Buffer.from([
      ...Buffer.from('<?xml version="1.0" encoding="koi8-r"?><t>'),
      0xf0,
      0xd2,
      0xc9,
      ...Buffer.from('</t>'),
    ]);
    expect(decodeBody(bytes, 'application/xml').text).toContain('<t>При</t>');
  });

  it('falls back to the other declaration when a UTF-8 label is wrong', () => {
    const bytes = Buffer.from('<?xml version="1.0" encoding="iso-8859-1"?><t>caf\u00e9</t>', 'latin1');
    expect(decodeBody(bytes, 'text/xml; charset=utf-8').text).toContain('café');
    expect(decodeBody(Buffer.from('<t>caf\u00e9</t>', 'latin1')).text).toBe('<t>café</t>');
  });

  it('trusts a UTF-8 declaration over a single-byte HTTP charset when the bytes are UTF-8', () => {
    const bytes = Buffer.from('<?xml version="1.0" encoding="UTF-8"?><t>café</t>', 'utf8');
    expect(decodeBody(bytes, 'text/xml; charset=iso-8859-1').text).toContain('café');
  });

  it('ignores labels that WHATWG maps to the replacement decoder', () => {
    expect(decodeBody(Buffer.from('<t>x</t>'), 'text/xml; charset=iso-2022-kr')).toEqual({
      text: '<t>x</t>',
      encoding: 'utf-8',
    });
  });

  it('ignores unknown labels and 8-bit bodies labelled UTF-16', () => {
    expect(decodeBody(Buffer.from('<t>x</t>'), 'text/xml; charset=klingon')).toEqual({
      text: '<t>x</t>',
      encoding: 'utf-8',
    });
    const bytes = Buffer.from('<?xml version="1.0" encoding="utf-16"?><t>x</t>');
    expect(decodeBody(bytes).text).toBe('<?xml version="1.0" encoding="utf-16"?><t>x</t>');
  });
});

describe('charset helpers', () => {
  it('reads the charset parameter in its usual spellings', () => {
    expect(charsetFromContentType('text/xml; charset=UTF-8')).toBe('utf-8');
    expect(charsetFromContentType("text/xml;charset= 'us-ascii'")).toBe('us-ascii');
    expect(charsetFromContentType('text/xml; charset = "gb2312"; q=1')).toBe('gb2312');
    expect(charsetFromContentType('text/xml')).toBeUndefined();
    expect(charsetFromContentType(undefined)).toBeUndefined();
  });

  it('reads the XML declaration encoding', () => {
    expect(encodingFromXmlDeclaration(Buffer.from("<?xml version='1.0' encoding='Windows-1252'?><a/>"))).toBe(
      'windows-1252',
    );
    expect(encodingFromXmlDeclaration(Buffer.from('<a encoding="x"/>'))).toBeUndefined();
  });
});
