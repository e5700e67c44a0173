/** Real MIME messages for the IMAP tests: encoded headers, QP and base64 bodies, multipart, attachments. */

interface Spec {
  from?: string;
  subject?: string;
  date?: string;
  /** Without angle brackets; random when absent. */
  messageId?: string;
}

function head(s: Spec, contentType: string, extra = ''): string {
  return [
    `From: ${s.from ?? 'Shop <orders@shop.example>'}`,
    'To: alice@example.com',
    `Subject: ${s.subject ?? 'hello'}`,
    `Date: ${s.date ?? 'Sun, 01 Mar 2026 10:00:00 +0000'}`,
    `Message-ID: <${s.messageId ?? `${Math.random().toString(36).slice(2)}@test.example`}>`,
    'MIME-Version: 1.0',
    `Content-Type: ${contentType}`,
    ...(extra ? [extra] : []),
    '',
    '',
  ].join('\r\n');
}

export function plain(s: Spec, body: string): string {
  return head(s, 'text/plain; charset=utf-8') + body + '\r\n';
}

/** ISO-8859-1 quoted-printable body. */
export function latin1Qp(s: Spec, qpBody: string): string {
  return (
    head(s, 'text/plain; charset=iso-8859-1', 'Content-Transfer-Encoding: quoted-printable') + qpBody + '\r\n'
  );
}

/** multipart/alternative (HTML first, then a base64 text/plain) plus a PDF attachment. */
export function alternativeWithAttachment(s: Spec, text: string, html: string): string {
  const b64 = Buffer.from(text, 'utf8').toString('base64');
  return (
    head(s, 'multipart/mixed; boundary="outer"') +
    [
      '--outer',
      'Content-Type: multipart/alternative; boundary="alt"',
      '',
      '--alt',
      'Content-Type: text/html; charset=utf-8',
      '',
      html,
      '--alt',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: base64',
      '',
      b64,
      '--alt--',
      '--outer',
      'Content-Type: application/pdf; name="invoice.pdf"',
      'Content-Disposition: attachment; filename="invoice.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('%PDF-1.4 not really').toString('base64'),
      '--outer--',
      '',
    ].join('\r\n')
  );
}

export function htmlOnly(s: Spec, html: string): string {
  return head(s, 'text/html; charset=utf-8') + html + '\r\n';
}

/**
 * A single-part message as bytes: `headers` (raw, may hold 8-bit bytes as they are) and `body` in the
 * part's charset, sent as 8bit.
 */
export function rawBytes(headers: Buffer[], contentType: string, body: Buffer): Buffer {
  const crlf = Buffer.from('\r\n');
  const lines = [
    ...headers,
    Buffer.from('To: alice@example.com'),
    Buffer.from('Date: Sun, 01 Mar 2026 10:00:00 +0000'),
    Buffer.from(`Message-ID: <${Math.random().toString(36).slice(2)}@test.example>`),
    Buffer.from('MIME-Version: 1.0'),
    Buffer.from(`Content-Type: ${contentType}`),
    Buffer.from('Content-Transfer-Encoding: 8bit'),
  ];
  return Buffer.concat([...lines.flatMap((h) => [h, crlf]), crlf, body, crlf]);
}
