// What a fault run leaves behind for a reader: the merged history as JSON, each daemon's log lines (every
// incarnation, with when the harness read each line) and the report.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { History, RawLogLine } from './history.js';

export function writeArtifacts(
  dir: string,
  run: { history: History; report: string; logs: ReadonlyMap<string, readonly RawLogLine[]> },
): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'report.txt'), `${run.report}\n`);
  writeFileSync(join(dir, 'history.json'), JSON.stringify(run.history));
  for (const [id, lines] of run.logs)
    writeFileSync(
      join(dir, `${id}.log`),
      lines.map((l) => `${new Date(l.at).toISOString()} ${l.line}\n`).join(''),
    );
}
