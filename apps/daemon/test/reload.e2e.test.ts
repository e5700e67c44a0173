// Hot reload on real daemon processes, through both broker kinds.
import { describe, expect, it } from 'vitest';
import { agentFile, baseConfig, daemonScope, runCli, SLOW_WATCHER } from './harness.js';

const scope = daemonScope();
const { boot } = scope;

describe.each(['local', 'nats'] as const)('reload with the %s broker', (broker) => {
  it('agent reload applies, prints the spec line and ✓ lines, exits 0; metrics follow', async () => {
    const { w, d } = await boot(baseConfig({ broker, agents: ['a', 'b'], runtime: SLOW_WATCHER }));
    expect(await d.metric('runtime_config_version', { agent_id: 'a' })).toBe(1);
    w.write('agents.d/a.yaml', agentFile('changed'));
    const r = await runCli(w, ['reload', '--config-dir', 'config']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^reload v2: applied=2 rejected=0 elapsed=\d+ms$/);
    expect(lines.slice(1)).toEqual(['  ✓ a', '  ✓ b']);
    await d.waitFor(/msg="config reload applied" version=2 applied=a,b rejected_count=0 elapsed_ms=\d+/);
    expect(await d.metric('config_reload_applied_total')).toBeGreaterThanOrEqual(1);
    expect(await d.metric('runtime_config_version', { agent_id: 'a' })).toBe(2);
    expect(await d.metric('config_last_reload_successful')).toBe(1);
  });

  it('one invalid agent among three: ✗ with file and line, the others apply; --json prints the ack', async () => {
    const { w, d } = await boot(baseConfig({ broker, agents: ['a', 'b', 'c'], runtime: SLOW_WATCHER }));
    w.write('agents.d/b.yaml', agentFile('x', '    bogus: 1\n'));
    const r = await runCli(w, ['reload', '--config-dir', 'config', '--json']);
    // Something was rejected: the reload is not a plain success (exit 2, "needs attention").
    expect(r.code, r.stderr).toBe(2);
    const ack = JSON.parse(r.stdout);
    expect(ack.applied).toEqual(['a', 'c']);
    expect(ack.rejected).toHaveLength(1);
    expect(ack.rejected[0].agent_id).toBe('b');
    expect(ack.rejected[0].reason).toMatch(
      /agents\.d\/b\.yaml:11:5 inbound_bindings\[0\]\.bogus: unknown key "bogus"/,
    );
    expect(ack.request_id).toMatch(/[0-9a-f-]{36}/);
    expect(await d.metric('runtime_config_version', { agent_id: 'b' })).toBe(1);
    expect(await d.metric('runtime_config_version', { agent_id: 'a' })).toBe(2);
    expect(await d.metric('config_reload_rejected_total')).toBe(1);
    expect(await d.metric('config_last_reload_successful')).toBe(0);
  });

  it('every agent rejected: exit 2, no new version', async () => {
    const { w } = await boot(baseConfig({ broker, runtime: SLOW_WATCHER }));
    w.write('agents.d/a.yaml', 'nope: 1\n');
    const r = await runCli(w, ['reload', '--config-dir', 'config']);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^reload v1: applied=0 rejected=1/);
    expect(r.stdout).toContain('  ✗ a: ');
  });

  it('restart-required fields: one warn record per field, listed in the ack, the rest applies', async () => {
    const { w, d } = await boot(baseConfig({ broker, runtime: SLOW_WATCHER }));
    w.write('agents.d/a.yaml', agentFile('new prompt') + 'workspace: ./elsewhere\n');
    w.write('memory.yaml', 'max_messages: 3\n');
    const r = await runCli(w, ['reload', '--config-dir', 'config', '--json']);
    const ack = JSON.parse(r.stdout);
    expect(ack.applied).toEqual(['a']);
    // Each with its reason, its file and the line of the changed key (workspace: after agentFile's 10 lines).
    expect(ack.restart_required).toEqual([
      {
        agent_id: 'a',
        field: 'workspace',
        reason: 'the agent keeps its running workspace until the daemon restarts',
        file: 'config/agents.d/a.yaml',
        line: 11,
      },
      {
        field: 'memory.yaml max_messages',
        reason: 'memory.yaml is read at start: the running settings stay until the daemon restarts',
        file: 'config/memory.yaml',
        line: 1,
      },
    ]);
    await d.waitFor(
      /level=warn msg="restart-required field changed during reload" field=workspace agent_id=a/,
    );
    await d.waitFor(
      /level=warn msg="restart-required field changed during reload" field="memory.yaml max_messages"/,
    );
  });
});

describe('reload triggers', () => {
  it('daemon down: one clear line, exit 1, fast', async () => {
    const w = scope.workdir(baseConfig());
    const r = await runCli(w, ['reload', '--config-dir', 'config']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    // It failed at once: the message says the daemon is not running, and does not claim a 5 s wait.
    expect(r.stderr).toContain('no control.reload.ack: the daemon is not running or cannot be reached');
    expect(r.stderr).not.toContain('within 5 s');
    expect(r.ms).toBeLessThan(3000);
  });

  it('reload disabled: agent reload gets no ack (exit 1) and the watcher does nothing', async () => {
    const { w, d } = await boot(
      baseConfig({
        runtime:
          'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\nreload:\n  enabled: false\n',
      }),
    );
    const r = await runCli(w, ['reload', '--config-dir', 'config']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('runtime.reload.enabled is false');
    w.write('agents.d/a.yaml', agentFile('changed'));
    await new Promise((res) => setTimeout(res, 1200));
    expect(d.count(/config reload applied/)).toBe(0);
  });

  it('the watcher applies a save by rename within 1.5 s, one version per save; unchanged saves make none', async () => {
    const { w, d } = await boot(baseConfig());
    const t0 = Date.now();
    w.writeByRename('agents.d/a.yaml', agentFile('renamed save'));
    await d.waitFor(/msg="config reload applied" version=2/, 1500);
    expect(Date.now() - t0).toBeLessThan(1500);
    w.writeByRename('agents.d/a.yaml', agentFile('second save'));
    await d.waitFor(/msg="config reload applied" version=3/, 1500);
    w.writeByRename('agents.d/a.yaml', agentFile('second save'));
    await new Promise((res) => setTimeout(res, 800));
    expect(d.count(/config reload applied/)).toBe(2);
    w.write('agents.d/late.yaml', agentFile());
    await d.waitFor(/restart-required field changed during reload" field="agent added" agent_id=late/, 1500);
  });
});
