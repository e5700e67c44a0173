/** The console's files: the compiled client script (dist/client) and the style sheet. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SECURITY_HEADERS } from './headers.js';
import { STYLE } from './style.js';

// Both src/ and dist/ sit one level below the package root, so this holds for sources and builds alike.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NAME = /^[a-z][a-z0-9-]*\.(js|css)$/;

/** A file of the console by its public name (`app.js`, `style.css`), or `null`. Names are never paths. */
export function readAsset(name: string): Response | null {
  if (!NAME.test(name)) return null;
  const css = name.endsWith('.css');
  let body: string;
  try {
    body = css ? (name === 'style.css' ? STYLE : '') : readFileSync(`${ROOT}dist/client/${name}`, 'utf8');
  } catch {
    return null;
  }
  if (body === '') return null;
  return new Response(body, {
    headers: {
      ...SECURITY_HEADERS,
      'content-type': css ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
      // Revalidated at every load: a daemon upgrade serves its own script at once.
      'cache-control': 'no-cache',
    },
  });
}
