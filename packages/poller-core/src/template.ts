/**
 * `message_template` rendering: `{name}` inserts a field, `{{` and `}}` are literal braces. Values are
 * inserted as they are and never expanded again, so an item field cannot inject another placeholder.
 */

type Part = { text: string } | { name: string };

export class TemplateSyntaxError extends Error {
  readonly code = 'POLLER_BAD_TEMPLATE';
  constructor(message: string) {
    super(message);
    this.name = 'TemplateSyntaxError';
  }
}

const NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const cache = new Map<string, Part[]>();

function parse(template: string): Part[] {
  const hit = cache.get(template);
  if (hit) return hit;
  const parts: Part[] = [];
  let text = '';
  for (let i = 0; i < template.length; i++) {
    const c = template[i];
    if (c === '{') {
      if (template[i + 1] === '{') {
        text += '{';
        i++;
        continue;
      }
      const end = template.indexOf('}', i + 1);
      if (end < 0)
        throw new TemplateSyntaxError(`unclosed "{" at offset ${i}; write "{{" for a literal brace`);
      const name = template.slice(i + 1, end).trim();
      if (!NAME.test(name))
        throw new TemplateSyntaxError(
          `"{${template.slice(i + 1, end)}}" is not a placeholder name; write "{{" for a literal brace`,
        );
      if (text) parts.push({ text });
      text = '';
      parts.push({ name });
      i = end;
    } else if (c === '}') {
      if (template[i + 1] === '}') {
        text += '}';
        i++;
        continue;
      }
      throw new TemplateSyntaxError(`lone "}" at offset ${i}; write "}}" for a literal brace`);
    } else {
      text += c;
    }
  }
  if (text) parts.push({ text });
  if (cache.size > 1000) cache.clear();
  cache.set(template, parts);
  return parts;
}

export type TemplateFields = Readonly<Record<string, string>> | ((placeholder: string) => string | undefined);

/** Renders `template`; a placeholder without a value renders as the empty string. Throws `TemplateSyntaxError`. */
export function renderTemplate(template: string, fields: TemplateFields): string {
  const get =
    typeof fields === 'function' ? fields : (n: string) => (Object.hasOwn(fields, n) ? fields[n] : undefined);
  let out = '';
  for (const p of parse(template)) {
    if ('text' in p) out += p.text;
    else {
      const v = get(p.name);
      out += v === undefined || v === null ? '' : String(v);
    }
  }
  return out;
}

/** Placeholder names used by `template`, in order of first use. Throws `TemplateSyntaxError`. */
export function templatePlaceholders(template: string): string[] {
  const names: string[] = [];
  for (const p of parse(template)) if ('name' in p && !names.includes(p.name)) names.push(p.name);
  return names;
}

/**
 * Problems of `template` against the placeholders a kind provides (`'any'` accepts every name).
 * Returns human-readable messages; empty when the template is fine.
 */
export function validateTemplate(template: string, allowed: readonly string[] | 'any'): string[] {
  let names: string[];
  try {
    names = templatePlaceholders(template);
  } catch (err) {
    return [(err as Error).message];
  }
  if (allowed === 'any') return [];
  const unknown = names.filter((n) => !allowed.includes(n));
  return unknown.map(
    (n) =>
      `unknown placeholder "{${n}}"; valid placeholders: ${allowed.map((a) => `{${a}}`).join(', ') || '(none)'}`,
  );
}
