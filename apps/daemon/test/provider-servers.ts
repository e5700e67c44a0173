// Helpers of the daemon tests against real mail and calendar servers: the config files of one agent with
// provider credentials, deliveries read from the `log` channel's JSON-lines file, and a polling wait.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Workdir } from './harness.js';

export const ENV = { AGENT_TEST_MIN_LEASE_TTL_MS: '1500' };

export function deliveries(w: Workdir): { to: string; text: string }[] {
  const f = join(w.root, 'out.jsonl');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { to: string; text: string });
}

export async function waitUntil(
  what: string,
  cond: () => boolean | Promise<boolean>,
  ms = 15_000,
  every = 50,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Agent `a` with a `log` binding and `credentials: { <kind>: <account> }`, `pollers.yaml`, and the account file. */
export function providerFiles(
  pollers: string,
  kind: 'mail' | 'calendar',
  account: { name: string; block: Record<string, unknown> },
): Record<string, string> {
  const block = Object.entries(account.block)
    .map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`)
    .join('\n');
  return {
    'llm.yaml':
      'providers:\n  main:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    api_key: key-1234\n',
    'plugins/log.yaml': 'instances:\n  default:\n    file: ./out.jsonl\n',
    'runtime.yaml': 'metrics:\n  listen: 127.0.0.1:0\nadmin:\n  listen: 127.0.0.1:0\n',
    'agents.d/a.yaml': `model:\n  provider: main\n  name: m\ninbound_bindings:\n  - plugin: log\n    instance: default\ncredentials:\n  ${kind}: ${account.name}\n`,
    'pollers.yaml': pollers,
    [`plugins/${kind}.yaml`]: `accounts:\n  ${account.name}:\n${block}\n`,
  };
}
