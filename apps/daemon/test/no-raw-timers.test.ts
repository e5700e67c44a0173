// Every timer of the product goes through @agent/timers: Node fires a raw setTimeout whose delay is above
// 2^31-1 ms (about 24.8 days) after 1 ms. Source outside packages/timers may not start one itself.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const TIMERS_SOURCE = join(root, 'packages', 'timers', 'src');
// Browser code: the console's client script runs in the page, where the Node timer helper cannot load; its
// waits are fixed and short (a 200 ms typing pause, a 2 s refresh).
const BROWSER_SOURCE = join(root, 'packages', 'console', 'src', 'client');
const RAW_TIMER = /\b(?:setTimeout|setInterval)\s*\(|\bAbortSignal\s*\.\s*timeout\s*\(/;

/** 1-based numbers of the lines of `text` that start a raw timer. */
function rawTimerLines(text: string): number[] {
  return text.split('\n').flatMap((line, i) => (RAW_TIMER.test(line) ? [i + 1] : []));
}

/** Non-test TypeScript files under `dir`; test files and `test` directories are exempt. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory())
      return ['test', 'node_modules', 'dist'].includes(name) ? [] : sourceFiles(p);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [p] : [];
  });
}

function productSources(): string[] {
  return ['packages', 'apps', 'examples']
    .flatMap((group) => readdirSync(join(root, group)).map((name) => join(root, group, name, 'src')))
    .filter((src) => src !== TIMERS_SOURCE && existsSync(src))
    .flatMap(sourceFiles)
    .filter((file) => !file.startsWith(BROWSER_SOURCE));
}

describe('raw timers', () => {
  it('the matcher finds setTimeout(, setInterval( and AbortSignal.timeout(, and nothing else', () => {
    const sample = [
      'const t = setTimeout(() => ctrl.abort(), ms);',
      'clearTimeout(t);',
      'setInterval (tick, 1000);',
      'await fetch(url, { signal: AbortSignal.timeout(5000) });',
      'const h = setTimer(cb, ms); h.cancel();',
      '// one setTimeout cannot wait more than 24.8 days',
      'globalThis.setTimeout(cb, 1);',
      'resetTimeout(x); AbortSignal.any([a, b]);',
    ].join('\n');
    expect(rawTimerLines(sample)).toEqual([1, 3, 4, 7]);
  });

  it('no source outside packages/timers starts a raw timer (use setTimer, sleep or timeoutSignal)', () => {
    const files = productSources();
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((file) =>
      rawTimerLines(readFileSync(file, 'utf8')).map((line) => `${relative(root, file)}:${line}`),
    );
    expect(found).toEqual([]);
  });
});
