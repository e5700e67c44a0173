/**
 * `${file:<path>}` and `${VAR}` references in string values. `$${` writes a literal `${`.
 * Secret values are collected so that they can be redacted from any text the daemon prints.
 */
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, statSync, type Stats } from 'node:fs';
import { userInfo } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import type { ConfigIssueCode } from './issues.js';
import type { Segments } from './source.js';

export interface RefContext {
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Records a resolved secret value and (for files) the file it came from. */
  onSecret(value: string, file?: { path: string; hash: string }): void;
  /**
   * Every file a `${file:}` names (absolute), resolved or not, with what was found there: `sha256:<hash of
   * the content>`, `missing (<errno>)`, `refused: mode 0644`, `refused: owner uid 1001`, `refused: a FIFO
   * (named pipe)` or `unreadable (<errno>)`. Never the value.
   */
  onFile?(path: string, state: string): void;
  onIssue(segments: Segments, code: ConfigIssueCode, message: string, hint?: string): void;
}

const REF = /\$\$\{|\$\{([^}]*)\}/g;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Whether `value` holds a reference (`${...}`, or the `$${` escape) anywhere: what `resolveRefs` would change.
 * A caller that keeps a value as it was parsed when it holds none shares the parsed file's (frozen) nodes.
 */
export function holdsReference(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('${');
  if (value === null || typeof value !== 'object') return false;
  for (const v of Object.values(value)) if (holdsReference(v)) return true;
  return false;
}

/** Deep copy of `value` with every reference resolved. A reference that fails leaves its string out. */
export function resolveRefs(value: unknown, ctx: RefContext, segments: Segments = []): unknown {
  if (typeof value === 'string') return resolveString(value, ctx, segments);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    value.forEach((v, i) => {
      out.push(resolveRefs(v, ctx, [...segments, i]));
    });
    return out;
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const r = resolveRefs(v, ctx, [...segments, k]);
      if (r === undefined) continue;
      // A `__proto__` key stays a key: assigned, it would become the copy's prototype, its values inherited
      // past every schema's check of unknown keys.
      if (k === '__proto__')
        Object.defineProperty(out, k, { value: r, enumerable: true, writable: true, configurable: true });
      else out[k] = r;
    }
    return out;
  }
  return value;
}

function resolveString(s: string, ctx: RefContext, segments: Segments): string | undefined {
  if (!holdsReference(s)) return s;
  let failed = false;
  const out = s.replace(REF, (whole, inner: string | undefined) => {
    if (whole === '$${') return '${';
    const ref = inner ?? '';
    if (ref.startsWith('file:')) {
      const v = readSecretFile(ref.slice(5).trim(), ctx, segments);
      if (v === undefined) failed = true;
      return v ?? '';
    }
    if (ENV_NAME.test(ref)) {
      const v = ctx.env[ref];
      if (v === undefined) {
        ctx.onIssue(
          segments,
          'CONFIG_ENV_UNSET',
          `environment variable ${ref} is not set`,
          `export ${ref} before starting the daemon, or remove the reference`,
        );
        failed = true;
        return '';
      }
      if (v.length >= 4) ctx.onSecret(v);
      return v;
    }
    ctx.onIssue(
      segments,
      'CONFIG_BAD_REFERENCE',
      `unknown reference form "\${${ref.slice(0, 40)}}"`,
      'use ${file:<path>} or ${ENV_VAR}; write $${ for a literal ${',
    );
    failed = true;
    return '';
  });
  // Never hand on a half-resolved value such as "Bearer " + nothing.
  return failed ? undefined : out;
}

function readSecretFile(path: string, ctx: RefContext, segments: Segments): string | undefined {
  if (!path) {
    ctx.onIssue(segments, 'CONFIG_BAD_REFERENCE', '${file:} needs a path', 'write ${file:./secrets/name}');
    return undefined;
  }
  const abs = isAbsolute(path) ? path : resolve(ctx.cwd, path);
  let real: string;
  let mode: number;
  let uid: number;
  try {
    real = realpathSync(abs);
    const st = statSync(real);
    if (!st.isFile()) {
      // Refused before any open: reading a FIFO would block the reload until something writes to it.
      const type = nonFileType(st);
      ctx.onFile?.(abs, `refused: ${type}`);
      ctx.onIssue(
        segments,
        'CONFIG_SECRET_NOT_FILE',
        `secret file ${path} is ${type}, not a regular file`,
        `point \${file:} at a regular file with mode 600`,
      );
      return undefined;
    }
    mode = st.mode & 0o777;
    uid = st.uid;
  } catch (err) {
    ctx.onFile?.(abs, `missing (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    ctx.onIssue(
      segments,
      'CONFIG_SECRET_MISSING',
      `secret file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      `create ${path} with mode 600, or fix the path (relative paths resolve against the daemon's working directory)`,
    );
    return undefined;
  }
  if ((mode & 0o077) !== 0) {
    ctx.onFile?.(abs, `refused: mode ${mode.toString(8).padStart(4, '0')}`);
    const shown = real === abs ? path : `${path} (-> ${real})`;
    ctx.onIssue(
      segments,
      'CONFIG_SECRET_PERMISSIONS',
      `secret file ${shown} has mode ${mode.toString(8).padStart(4, '0')}; group or others may read it`,
      `chmod 600 ${real}`,
    );
    return undefined;
  }
  // Another user who owns the file can change or widen it at any time: only the daemon's own user may.
  const own = process.getuid?.();
  if (own !== undefined && uid !== own) {
    ctx.onFile?.(abs, `refused: owner uid ${uid}`);
    const shown = real === abs ? path : `${path} (-> ${real})`;
    ctx.onIssue(
      segments,
      'CONFIG_SECRET_OWNER',
      `secret file ${shown} is owned by uid ${uid}, not by the daemon's user (uid ${own})`,
      `chown ${userName(own)} ${real}`,
    );
    return undefined;
  }
  let content: string;
  try {
    content = readFileSync(real, 'utf8');
  } catch (err) {
    ctx.onFile?.(abs, `unreadable (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    ctx.onIssue(
      segments,
      'CONFIG_SECRET_MISSING',
      `secret file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      `make ${path} readable by the daemon user`,
    );
    return undefined;
  }
  const hash = createHash('sha256').update(content).digest('hex');
  ctx.onFile?.(abs, `sha256:${hash}`);
  const value = content.replace(/\r?\n$/, '');
  if (value === '') {
    ctx.onIssue(
      segments,
      'CONFIG_SECRET_EMPTY',
      `secret file ${path} is empty`,
      `write the secret into ${path}`,
    );
    return undefined;
  }
  ctx.onSecret(value, { path: abs, hash });
  return value;
}

function userName(uid: number): string {
  try {
    return userInfo().username;
  } catch {
    // No passwd entry (a container running as an arbitrary uid): chown takes the number.
    return String(uid);
  }
}

function nonFileType(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}
