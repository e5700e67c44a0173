import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createLogger, createMemoryLogger, formatRecord, streamSink } from './index.js';

describe('log', () => {
  it('writes key=value lines with quoted message and values that need quoting', () => {
    const lines: string[] = [];
    const log = createLogger({ write: (l) => lines.push(l), now: () => new Date('2026-01-02T03:04:05Z') });
    log.info('config reload applied', {
      version: 3,
      applied: ['a', 'b'],
      rejected_count: 0,
      note: 'two words',
    });
    expect(lines).toEqual([
      'ts=2026-01-02T03:04:05.000Z level=info msg="config reload applied" version=3 applied=a,b rejected_count=0 note="two words"',
    ]);
  });

  it('drops records below the level and binds child fields', () => {
    const lines: string[] = [];
    const log = createLogger({ level: 'warn', write: (l) => lines.push(l) }).child({ job_id: 'j1' });
    log.info('hidden');
    log.warn('shown', { x: 1 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/msg="shown" job_id=j1 x=1$/);
  });

  it('writes JSON when asked', () => {
    const lines: string[] = [];
    createLogger({ format: 'json', write: (l) => lines.push(l) }).error('boom', { err: new Error('bad') });
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'error', msg: 'boom', err: 'bad' });
  });

  it('never prints fields named like credentials', () => {
    const line = formatRecord(
      {
        ts: 't',
        level: 'info',
        msg: 'm',
        fields: { api_key: 'sk-123', access_token: 'x', authorization: 'Bearer y', user: 'u' },
      },
      'kv',
    );
    expect(line).not.toMatch(/sk-123|Bearer y|=x\b/);
    expect(line).toContain('user=u');
  });

  describe('redactor', () => {
    const SECRET = 'sntl-9b4e"\\x';
    const hide = (t: string): string => {
      let out = t;
      for (const form of [SECRET, JSON.stringify(SECRET).slice(1, -1)])
        if (out.includes(form)) out = out.split(form).join('[redacted]');
      return out;
    };
    const record = (fields: Record<string, unknown>): void => {
      const levels = ['debug', 'info', 'warn', 'error'] as const;
      for (const format of ['kv', 'json'] as const) {
        const lines: string[] = [];
        const log = createLogger({ level: 'debug', format, write: (l) => lines.push(l), redact: hide });
        for (const lv of levels) log.child({ bound: `b ${SECRET}` })[lv](`m ${SECRET}`, fields);
        expect(lines).toHaveLength(4);
        for (const l of lines) {
          expect(l).not.toContain('sntl-9b4e');
          expect(l).toContain('[redacted]');
        }
      }
    };

    it('hides secrets in the message and every field value, at every level, in kv and JSON', () => {
      record({
        url: `https://api.example.org/${SECRET}/items`,
        err: new Error(`GET /${SECRET} failed`),
        list: ['a', SECRET, { deep: [SECRET] }],
        obj: { nested: { value: `x${SECRET}y` }, [SECRET]: 1 },
        n: 1,
      });
    });

    it('a redactor set later reaches children made before', () => {
      const lines: string[] = [];
      const root = createLogger({ write: (l) => lines.push(l) });
      const child = root.child({ component: 'pollers' });
      child.info('before', { url: `/${SECRET}` });
      root.setRedactor(hide);
      child.info('after', { url: `/${SECRET}` });
      root.setRedactor(null);
      child.info('cleared', { n: 1 });
      expect(lines[0]).toContain('sntl-9b4e');
      expect(lines[1]).not.toContain('sntl-9b4e');
      expect(lines[1]).toContain('url=/[redacted]');
      expect(lines[2]).toMatch(/msg="cleared" component=pollers n=1$/);
    });

    it('without secrets the line is the same, and a record below the level never reaches the redactor', () => {
      let calls = 0;
      const counting = (t: string): string => {
        calls++;
        return t;
      };
      const rec = {
        ts: 't',
        level: 'info' as const,
        msg: 'm',
        fields: { a: 'x y', b: [1, { c: 'd' }], e: { f: 'g' } },
      };
      for (const format of ['kv', 'json'] as const)
        expect(formatRecord(rec, format, counting)).toBe(formatRecord(rec, format));
      expect(calls).toBeGreaterThan(0);
      calls = 0;
      const log = createLogger({ level: 'info', write: () => {}, redact: counting });
      log.debug('dropped', { url: 'x' });
      expect(calls).toBe(0);
    });
  });

  it('memory logger records structured fields', () => {
    const log = createMemoryLogger();
    log.child({ a: 1 }).warn('w', { b: 2 });
    expect(log.find('w')[0]?.fields).toEqual({ a: 1, b: 2 });
  });

  it('never throws: a sink that throws is swallowed, a field JSON cannot print keeps the record', () => {
    const throwing = createLogger({
      write: () => {
        throw new Error('write EPIPE');
      },
    });
    expect(() => throwing.error('uncaught exception', { err: 'x' })).not.toThrow();
    const lines: string[] = [];
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const log = createLogger({ format: 'json', write: (l) => lines.push(l) });
    expect(() => log.info('cyclic', { obj: cyclic, n: 10n })).not.toThrow();
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'cyclic', log_error: expect.any(String) });
  });

  it('a stream sink stops writing, silently, once the reader of its pipe is gone (EPIPE)', async () => {
    // A real pipe: the child exits without reading, so our end of its stdin fails with EPIPE.
    const child = spawn(process.execPath, ['-e', ''], { stdio: ['pipe', 'ignore', 'ignore'] });
    await once(child, 'exit');
    const stream = child.stdin!;
    let writes = 0;
    const write = stream.write.bind(stream);
    stream.write = ((...args: Parameters<typeof write>) => {
      writes++;
      return write(...args);
    }) as typeof stream.write;
    const sink = streamSink(stream);
    const log = createLogger({ write: sink });
    log.error('first');
    await once(stream, 'close');
    const before = writes;
    for (let i = 0; i < 100; i++) log.error('uncaught exception', { err: 'write EPIPE' });
    expect(writes).toBe(before);
  });
});
