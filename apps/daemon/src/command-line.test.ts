// The plain-line parser against yargs: on a table of plain lines (every command, every option) both produce the
// same request, and other lines are left to yargs (which parses them differently, or rejects them).
import { plainLineRequest, type ClientRequest, type CliIO } from '@agent/cli/commands';
import { describe, expect, it } from 'vitest';
import { parseCommandLine, plainDaemonLine, type DaemonArgs } from './command-line.js';
import { UsageError } from './usage.js';

function quietIO(): CliIO {
  return { out: () => {}, err: () => {}, cwd: '.', env: {}, color: false, setExitCode: () => {} };
}

/** The request yargs' handler runs for `args`; rejects with a UsageError on a usage error. */
async function yargsRequest(args: string[]): Promise<ClientRequest | undefined> {
  let seen: ClientRequest | undefined;
  await parseCommandLine(args, quietIO(), async (_io, request) => {
    seen = request;
    return 0;
  });
  return seen;
}

/** The daemon arguments yargs' default command gets for `args`. */
async function yargsDaemonArgs(args: string[]): Promise<DaemonArgs | undefined> {
  let seen: DaemonArgs | undefined;
  await parseCommandLine(
    args,
    quietIO(),
    async () => 0,
    async (_io, a) => {
      seen = a;
    },
  );
  return seen;
}

const PLAIN: string[][] = [
  ['pollers', 'list'],
  ['pollers', 'list', '--json'],
  ['pollers', 'list', '--config-dir', 'cfg'],
  ['pollers', 'list', '--config-dir=cfg', '--admin-url', 'http://127.0.0.1:9'],
  ['pollers', 'show', 'job-1'],
  ['pollers', 'show', '--json', 'job-1'],
  ['pollers', 'show', '007'],
  ['pollers', 'run', 'news.rss'],
  ['pollers', 'pause', 'a'],
  ['pollers', 'resume', 'a', '--admin-url=http://127.0.0.1:9091'],
  ['pollers', 'reset', 'a'],
  ['pollers', 'reset', 'a', '--yes'],
  ['pollers', 'reload'],
  ['pollers', 'reload', '--dry-run', '--json'],
  ['reload'],
  ['reload', '--json', '--dry-run'],
  ['reload', '--config-dir', 'other'],
  ['cluster', 'status'],
  ['cluster', 'status', '--json', '--config-dir', 'c'],
];

describe('plain command lines', () => {
  it.each(PLAIN)('%s … gives the request yargs gives', async (...args) => {
    const plain = plainLineRequest(args);
    expect(plain).toBeDefined();
    expect(plain).toEqual(await yargsRequest(args));
  });

  it('fills the defaults of the command’s options', () => {
    expect(plainLineRequest(['pollers', 'show', '007'])).toEqual({
      command: 'pollers',
      args: { action: 'show', id: '007', json: false, yes: false, configDir: './config' },
    });
    expect(plainLineRequest(['reload'])).toEqual({
      command: 'reload',
      args: { configDir: './config', json: false, dryRun: false },
    });
  });
});

describe('lines left to yargs', () => {
  // yargs reads these, and reads them differently from a strict long-option parser.
  it.each([
    [['pollers', 'list', '--no-json'], { json: false }],
    [['pollers', 'list', '--configDir', 'x'], { configDir: 'x' }],
    [['pollers', 'list', '--json=false'], { json: false }],
  ])('%s', async (args, expected) => {
    expect(plainLineRequest(args)).toBeUndefined();
    const request = await yargsRequest(args);
    expect(request?.command).toBe('pollers');
    expect(request?.args).toMatchObject(expected);
  });

  // Usage errors: yargs words them (exit 2, "did you mean").
  it.each([
    ['pollers', 'show'],
    ['pollers', 'show', 'a', 'b'],
    ['pollers', 'list', '--config-dir'],
    ['pollers', 'list', '--config-dir', '--json'],
    ['pollers', 'reset', 'a', '--dry-run'],
    ['pollers', 'lst'],
    ['reload', '--admin-url', 'http://127.0.0.1:9'],
    ['cluster', 'stat'],
  ])('%s … is a usage error', async (...args) => {
    expect(plainLineRequest(args)).toBeUndefined();
    await expect(yargsRequest(args)).rejects.toBeInstanceOf(UsageError);
  });

  it.each([
    ['pollers', 'list', '--json', '--json'],
    ['pollers', 'list', '--', 'x'],
    ['pollers', 'list', '-h'],
    ['pollers', 'list', '--help'],
    ['--version'],
    ['pollers', 'list', '--config-dir='],
    ['pollers', 'show', '--json'],
    ['config', 'push'],
    [],
  ])('%s … is not plain', (...args) => {
    expect(plainLineRequest(args)).toBeUndefined();
  });
});

describe('the daemon’s own line', () => {
  it.each([
    [],
    ['--config-dir', 'cfg'],
    ['--config-dir=cfg', '--log-format', 'json', '--log-level=debug'],
    ['--check-config'],
    ['--check-config', '--config-dir', 'x'],
  ])('%s … gives the arguments yargs gives', async (...args) => {
    const plain = plainDaemonLine(args);
    expect(plain).toBeDefined();
    expect(plain).toEqual(await yargsDaemonArgs(args));
  });

  it('defaults to ./config, running', () => {
    expect(plainDaemonLine([])).toEqual({ configDir: './config', checkConfig: false });
  });

  it.each([['--log-format', 'xml'], ['--log-level', 'trace'], ['--json'], ['extra']])(
    '%s … is a usage error left to yargs',
    async (...args) => {
      expect(plainDaemonLine(args)).toBeUndefined();
      await expect(yargsDaemonArgs(args)).rejects.toBeInstanceOf(UsageError);
    },
  );

  it.each([['--no-check-config'], ['--configDir', 'x'], ['--help'], ['--version'], ['-h']])(
    '%s … is not plain',
    (...args) => {
      expect(plainDaemonLine(args)).toBeUndefined();
    },
  );
});
