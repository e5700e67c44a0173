// What a config read refuses, and how: size, nesting, files that are not regular, saves in progress.
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, loadConfigWhenQuiet } from './config.js';
import { formatIssue } from './issues.js';
import { cachedParseCount, MAX_FILE_BYTES, MAX_YAML_DEPTH, parseYamlText } from './source.js';
import { agentYaml, baseFiles, tempConfig, type TempDir } from './testing.js';

let dirs: TempDir[] = [];
const make = (files: Record<string, string>): TempDir => {
  const d = tempConfig(files);
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs) d.cleanup();
  dirs = [];
});

const names = { rel: 'x.yaml', abs: '/cfg/x.yaml', display: 'cfg/x.yaml' };
const parse = (text: string) => parseYamlText(text, names, 'global');
const nest = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;

describe('YAML nesting cap', () => {
  it.each([
    ['flow sequences', `a: ${nest(100_000)}\n`, 1],
    ['flow mappings', `a: ${'{a: '.repeat(100_000)}1${'}'.repeat(100_000)}\n`, 1],
    ['compact block sequences', `a:\n  ${'- '.repeat(100_000)}x\n`, 2],
    ['a syntax error before the deep part', `a: [1\nb: ${nest(100_000)}\n`, 2],
  ])(
    'refuses 100k-deep %s with a located CONFIG_YAML_TOO_DEEP, not a stack overflow',
    (_what, text, line) => {
      const r = parse(text);
      expect(r.src).toBeUndefined();
      expect(r.issues).toHaveLength(1);
      const issue = r.issues[0]!;
      expect(issue).toMatchObject({ code: 'CONFIG_YAML_TOO_DEEP', file: 'cfg/x.yaml', line });
      expect(issue.column).toBeGreaterThan(0);
      expect(issue.message).toContain(`deeper than ${MAX_YAML_DEPTH} levels`);
      expect(formatIssue(issue)).not.toMatch(/call stack/i);
    },
  );

  it(`accepts ${MAX_YAML_DEPTH} levels and refuses one more`, () => {
    // The top-level mapping is a level.
    expect(parse(`a: ${nest(MAX_YAML_DEPTH - 1)}\n`).issues).toEqual([]);
    expect(parse(`a: ${nest(MAX_YAML_DEPTH)}\n`).issues[0]?.code).toBe('CONFIG_YAML_TOO_DEEP');
  });

  it('a large file with a syntax error gets the fast parser message with its line, at once', () => {
    const r = parse(`a: [1\n${'k: v\n'.repeat(100_000)}`);
    expect(r.issues[0]).toMatchObject({ code: 'CONFIG_YAML_SYNTAX', line: 2 });
  });
});

describe('reading config files', () => {
  it(`refuses a file larger than ${MAX_FILE_BYTES} bytes with CONFIG_FILE_TOO_LARGE`, () => {
    const d = make(baseFiles({ a: agentYaml(), big: `# ${'x'.repeat(MAX_FILE_BYTES)}\n` }));
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect([...r.snapshot!.agents.keys()]).toEqual(['a']);
    expect(r.errors.find((e) => e.agentId === 'big')).toMatchObject({
      code: 'CONFIG_FILE_TOO_LARGE',
      file: join(d.config, 'agents.d', 'big.yaml'),
    });
  });

  it('refuses a FIFO where a config file should be, without waiting for a writer', () => {
    const d = make(baseFiles());
    execFileSync('mkfifo', [join(d.config, 'agents.d', 'pipe.yaml')]);
    const r = loadConfig(d.config, { cwd: d.root, env: {} });
    expect([...r.snapshot!.agents.keys()]).toEqual(['a']);
    const e = r.errors.find((x) => x.agentId === 'pipe')!;
    expect(e.code).toBe('CONFIG_FILE_UNREADABLE');
    expect(e.message).toContain('is a FIFO (named pipe), not a regular file');
  });

  it('with settledBefore, a file changed after it is CONFIG_FILE_CHANGING, located at the file', () => {
    const d = make(baseFiles({ a: agentYaml(), b: agentYaml() }));
    // Every file was written just now (a change time no tool can set back).
    const r = loadConfig(d.config, { cwd: d.root, env: {}, settledBefore: Date.now() - 200 });
    expect(r.errors.map((e) => e.code)).toContain('CONFIG_FILE_CHANGING');
    expect(r.errors.find((e) => e.agentId === 'b')).toMatchObject({
      code: 'CONFIG_FILE_CHANGING',
      file: join(d.config, 'agents.d', 'b.yaml'),
    });
    const quiet = loadConfig(d.config, { cwd: d.root, env: {}, settledBefore: Date.now() + 500 });
    expect(quiet.errors).toEqual([]);
  });

  it('loadConfigWhenQuiet reads a file written in two halves with a pause between only once it is whole', async () => {
    const d = make(baseFiles({ a: agentYaml() }));
    await new Promise((r) => setTimeout(r, 250)); // every file quiet
    const full = agentYaml().replace('hello', `"${'long prompt '.repeat(200)}end"`);
    const file = join(d.config, 'agents.d', 'a.yaml');
    // In place: truncate and write the first half; the rest comes 100 ms later.
    const fd = openSync(file, 'w');
    writeSync(fd, full.slice(0, full.length / 2));
    const rest = new Promise<void>((resolve) =>
      setTimeout(() => {
        writeSync(fd, full.slice(full.length / 2));
        closeSync(fd);
        resolve();
      }, 100),
    );
    const r = await loadConfigWhenQuiet(d.config, { cwd: d.root, env: {} });
    await rest;
    expect(r.errors).toEqual([]);
    expect(r.snapshot!.agents.get('a')!.definition.system_prompt).toMatch(/ end$/);
  });

  it('loadConfigWhenQuiet gives up after maxWaitMs and reports the file still changing', async () => {
    const d = make(baseFiles({ a: agentYaml(), b: agentYaml() }));
    const r = await loadConfigWhenQuiet(d.config, {
      cwd: d.root,
      env: {},
      quietMs: 60_000,
      maxWaitMs: 120,
    });
    expect(r.errors.length).toBeGreaterThan(0);
    expect(r.errors.every((e) => e.code === 'CONFIG_FILE_CHANGING')).toBe(true);
  });

  it('the parse cache keeps the files of the last read only, not every version saved since', () => {
    const d = make(baseFiles({ a: agentYaml('# agent a\n') }));
    for (let i = 0; i < 5; i++) {
      d.write('agents.d/b.yaml', agentYaml(`# version ${i}\n`));
      expect(loadConfig(d.config, { cwd: d.root, env: {} }).errors).toEqual([]);
    }
    // llm.yaml, plugins/log.yaml, agents.d/a.yaml and the current agents.d/b.yaml.
    expect(cachedParseCount()).toBe(4);
  });
});
