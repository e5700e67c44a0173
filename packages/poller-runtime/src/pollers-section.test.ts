import { loadConfig } from '@agent/config-snapshot';
import { baseFiles, tempConfigPool, type TempDir } from '@agent/config-snapshot/testing';
import { afterEach, describe, expect, it } from 'vitest';
import type { LegacyJobSource } from './legacy-jobs.js';
import { jobSchema } from './pollers-schema.js';
import { pollersOf, pollersSectionReader } from './pollers-section.js';

const pool = tempConfigPool();
afterEach(pool.cleanup);
const make = pool.make;

const load = (d: TempDir, env: Record<string, string> = {}) =>
  loadConfig(d.config, { cwd: d.root, env, sections: [pollersSectionReader()] });

const pollers = (jobs: string): string => `pollers:\n  breaker_threshold: 3\n  jobs:\n${jobs}`;
const job = (id: string, schedule = '{ every_secs: 60 }'): string =>
  `    - id: ${id}\n      kind: rss\n      agent: a\n      schedule: ${schedule}\n      config: { feed_url: "http://x" }\n`;

describe('poller jobs', () => {
  it('loads settings with defaults and keeps valid jobs beside invalid ones', () => {
    const d = make({
      ...baseFiles(),
      'pollers.yaml': pollers(
        job('j1') +
          job('j2', '{ every_secs: 60, cron: "0 * * * * *" }') +
          job('j3', '{ cron: "0 0 * * * *", tz: Europe/Paris }'),
      ),
    });
    const r = load(d);
    const p = pollersOf(r.snapshot!)!;
    expect(p.settings).toMatchObject({
      enabled: true,
      breaker_threshold: 3,
      default_jitter_ms: 5000,
      lease_ttl_factor: 2,
      tick_timeout_secs: 120,
      state_db: './data/poller.db',
    });
    expect(p.jobs.map((j) => j.spec.id)).toEqual(['j1', 'j3']);
    expect(p.jobs[0]!.spec.paused_on_boot).toBe(false);
    expect(p.rejected).toHaveLength(1);
    expect(p.rejected[0]!.issues[0]).toMatchObject({
      jobId: 'j2',
      path: 'pollers.jobs[1].schedule',
      line: 12,
    });
    expect(p.rejected[0]!.issues[0]!.message).toBe(
      'has every_secs and cron; exactly one of every_secs, cron, at is allowed',
    );
  });

  it('a wrong every_secs is named with its value, at its key, as a bad schedule', () => {
    const d = make({ ...baseFiles(), 'pollers.yaml': pollers(job('j1', '{ every_secs: fifteen }')) });
    const issue = pollersOf(load(d).snapshot!)!.rejected[0]!.issues[0]!;
    expect(issue).toMatchObject({
      code: 'POLLER_BAD_SCHEDULE',
      path: 'pollers.jobs[0].schedule.every_secs',
      message: 'every_secs "fifteen" is not a whole number of seconds >= 1',
      hint: expect.stringContaining('whole number of seconds'),
    });
  });

  it('refuses a tick_timeout_secs below 1 s', () => {
    const d = make({ ...baseFiles(), 'pollers.yaml': 'pollers:\n  tick_timeout_secs: 0\n' });
    const r = load(d);
    expect(r.snapshot ? pollersOf(r.snapshot) : null).toBeNull();
    expect(r.errors[0]).toMatchObject({
      code: 'CONFIG_INVALID_VALUE',
      path: 'pollers.tick_timeout_secs',
      line: 2,
    });
  });

  it('rejects both jobs that share an id', () => {
    const d = make({ ...baseFiles(), 'pollers.yaml': pollers(job('j1') + job('j1') + job('j2')) });
    const p = pollersOf(load(d).snapshot!)!;
    expect(p.jobs.map((j) => j.spec.id)).toEqual(['j2']);
    expect(p.rejected.map((x) => [x.index, x.issues[0]!.code])).toEqual([
      [0, 'CONFIG_DUPLICATE_JOB'],
      [1, 'CONFIG_DUPLICATE_JOB'],
    ]);
  });

  it('resolves ${ENV} in job config and rejects only the job whose variable is unset', () => {
    const d = make({
      ...baseFiles(),
      'pollers.yaml': pollers(
        `    - id: w1\n      kind: webhook_poll\n      agent: a\n      schedule: { every_secs: 60 }\n      config: { headers: { Authorization: "Bearer \${TOKEN_A}" } }\n` +
          `    - id: w2\n      kind: webhook_poll\n      agent: a\n      schedule: { every_secs: 60 }\n      config: { headers: { Authorization: "Bearer \${TOKEN_B}" } }\n`,
      ),
    });
    const r = load(d, { TOKEN_A: 'secret-token-a' });
    const p = pollersOf(r.snapshot!)!;
    expect(p.jobs.map((j) => j.spec.id)).toEqual(['w1']);
    expect((p.jobs[0]!.spec.config as { headers: Record<string, string> }).headers.Authorization).toBe(
      'Bearer secret-token-a',
    );
    expect(p.rejected[0]!.issues[0]).toMatchObject({
      code: 'CONFIG_ENV_UNSET',
      jobId: 'w2',
      path: 'pollers.jobs[1].config.headers.Authorization',
    });
    expect(p.rejected[0]!.issues[0]!.message).toContain('TOKEN_B');
    expect(r.snapshot!.redact('sent Bearer secret-token-a')).toBe('sent Bearer [redacted]');
  });

  it('keeps a `__proto__` key of a job an own key, never the prototype of its config', () => {
    // j1's config holds no reference (the parsed node itself), j2's does (a resolved copy).
    const proto = 'feed_url: "http://x", __proto__: { to: op }';
    const d = make({
      ...baseFiles(),
      'pollers.yaml': pollers(
        job('j1').replace('feed_url: "http://x"', proto) +
          job('j2').replace('feed_url: "http://x"', proto.replace('http://x', '${FEED}')),
      ),
    });
    for (const j of pollersOf(load(d, { FEED: 'http://y' }).snapshot!)!.jobs) {
      const config = j.spec.config as Record<string, unknown>;
      expect(Object.getPrototypeOf(config)).toBe(Object.prototype);
      expect(Object.keys(config)).toEqual(['feed_url', '__proto__']);
      expect(Object.getOwnPropertyDescriptor(config, '__proto__')?.value).toEqual({ to: 'op' });
    }
  });

  it("shares a job's mappings without references with the parsed file; the job itself takes the defaults", () => {
    const d = make({
      ...baseFiles(),
      'pollers.yaml': pollers(job('j1') + job('j2').replace('"http://x"', '"http://${HOST}/f"')),
    });
    const [j1, j2] = pollersOf(load(d, { HOST: 'h' }).snapshot!)!.jobs;
    expect(Object.isFrozen(j1!.spec.config) && Object.isFrozen(j1!.spec.schedule)).toBe(true);
    expect(Object.isFrozen(j1!.spec)).toBe(false);
    expect(j1!.spec.paused_on_boot).toBe(false);
    expect(j2!.spec.config).toEqual({ feed_url: 'http://h/f' });
    expect(Object.isFrozen(j2!.spec.config)).toBe(false);
    expect(Object.isFrozen(j2!.spec.schedule)).toBe(true);
  });

  it('the job schema fills in defaults only at the top of a job (its deeper mappings may be frozen)', () => {
    const defaultsBelowTop: string[] = [];
    const walk = (schema: unknown, at: string): void => {
      if (schema === null || typeof schema !== 'object') return;
      for (const [key, value] of Object.entries(schema)) {
        if (key === 'default' && at.split('.').length > 2) defaultsBelowTop.push(at);
        walk(value, `${at}.${key}`);
      }
    };
    for (const [key, value] of Object.entries(jobSchema.properties)) walk(value, `job.${key}`);
    expect(defaultsBelowTop).toEqual([]);
  });

  it('builds located issues for kinds through issueAt', () => {
    const d = make({ ...baseFiles(), 'pollers.yaml': pollers(job('j1')) });
    const j = pollersOf(load(d).snapshot!)!.jobs[0]!;
    expect(j.issueAt(['config', 'feed_url'], 'bad url', 'fix it', 'POLLER_INVALID_CONFIG')).toMatchObject({
      code: 'POLLER_INVALID_CONFIG',
      path: 'pollers.jobs[0].config.feed_url',
      line: 8,
      jobId: 'j1',
      scope: 'job',
    });
  });

  it('owns its files: plugins/ files a legacy source names are no plugin files', () => {
    const d = make({ ...baseFiles(), 'plugins/old-jobs.yaml': 'jobs: []\n' });
    const legacy: LegacyJobSource = {
      file: 'plugins/old-jobs.yaml',
      label: 'old-jobs',
      title: 'legacy jobs',
      deprecation: 'deprecation: old jobs',
      translate: () => ({ jobs: [], rejected: [], issues: [] }),
      legacyPath: () => [],
    };
    const s = loadConfig(d.config, {
      cwd: d.root,
      env: {},
      sections: [pollersSectionReader({ legacy: [legacy] })],
    }).snapshot!;
    expect(s.plugins.has('old-jobs')).toBe(false);
    expect(pollersOf(s)).toBeNull();
  });
});

const longJob = (i: number) =>
  `    - id: feed-${i}\n      kind: rss\n      agent: a\n      schedule: { every_secs: 60 }\n      config:\n        feed_url: "https://feeds.example.org/${i}/feed.xml"\n        message_template: "{title}: a template of the length operators write {link}"\n`;

describe('the size of pollers.yaml', () => {
  it('a file of 18,000 jobs, over the 4 MiB of other files, loads whole', () => {
    const text = pollers(Array.from({ length: 18_000 }, (_, i) => longJob(i)).join(''));
    expect(text.length).toBeGreaterThan(4 * 1024 * 1024);
    const r = load(make({ ...baseFiles(), 'pollers.yaml': text }));
    expect(r.errors).toEqual([]);
    expect(pollersOf(r.snapshot!)!.jobs).toHaveLength(18_000);
  });

  it('a file over its own cap is a located error of the section, not an empty one', () => {
    const reader = { ...pollersSectionReader(), maxFileBytes: 1024 };
    const d = make({
      ...baseFiles(),
      'pollers.yaml': pollers(Array.from({ length: 10 }, (_, i) => longJob(i)).join('')),
    });
    const r = loadConfig(d.config, { cwd: d.root, env: {}, sections: [reader] });
    expect(r.errors).toMatchObject([
      {
        code: 'CONFIG_FILE_TOO_LARGE',
        scope: 'section',
        message: expect.stringMatching(/larger than the 1024-byte cap/),
      },
    ]);
    expect(pollersOf(r.snapshot!)).toBeNull();
  });
});
