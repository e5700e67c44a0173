/** Largest text both chat vendors accept in one message (UTF-16 code units). */
export const MAX_MESSAGE_LENGTH = 4096;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Splits `text` into parts of at most `max` UTF-16 code units. A cut prefers the last newline in
 * the second half of the window, then the last space there (that one separator is dropped), and
 * otherwise cuts hard, but never between the two halves of a surrogate pair. Parts that would be
 * blank are left out. Texts up to `max` come back unchanged as one part.
 */
export function splitText(text: string, max: number = MAX_MESSAGE_LENGTH): string[] {
  if (!Number.isInteger(max) || max < 2) throw new RangeError('splitText: max must be an integer >= 2');
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const window = rest.slice(0, max + 1); // the separator itself may sit just past the limit
    const minCut = Math.floor(max / 2);
    let cut = window.lastIndexOf('\n');
    if (cut < minCut) cut = window.lastIndexOf(' ');
    if (cut >= minCut) {
      parts.push(rest.slice(0, cut));
      rest = rest.slice(cut + 1);
      continue;
    }
    cut = max;
    if (isHighSurrogate(rest.charCodeAt(cut - 1))) cut -= 1;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  parts.push(rest);
  // A cut right before a trailing separator, or a run of blanks, must not become a message of its own.
  const visible = parts.filter((p) => p.trim() !== '');
  return visible.length > 0 ? visible : [text.slice(0, max)];
}
