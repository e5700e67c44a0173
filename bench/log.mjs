// Cost of a formatted log line with the secret redactor: time and heap bytes per line, without a redactor
// (a configuration without secrets), with secrets none of which is in the line, and with one that is.
// Target: a line without secrets allocates nothing more than a line formatted without a redactor.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { formatRecord } from '../packages/log/dist/index.js';
import { makeRedactor } from '../packages/config-snapshot/dist/snapshot.js';

const here = fileURLToPath(import.meta.url);
// Heap bytes are read between two forced collections, with a young generation large enough that no
// collection runs while a batch is formatted: the difference is what the batch allocated.
if (typeof globalThis.gc !== 'function') {
  const r = spawnSync(
    process.execPath,
    ['--expose-gc', '--min-semi-space-size=128', '--max-semi-space-size=128', here, ...process.argv.slice(2)],
    { stdio: 'inherit' },
  );
  process.exit(r.status ?? 1);
}

const quick = process.argv.includes('--quick');
const N = quick ? 5_000 : 20_000;
const SECRETS = ['sk-live-4f9a1c2b7d3e', 'tok-8c1d2e3f4a5b', 'app-secret-0a9b8c7d'];
const redact = makeRedactor(SECRETS);

const record = (url) => ({
  ts: '2026-03-01T12:00:00.000Z',
  level: 'debug',
  msg: 'http request done',
  fields: {
    job_id: 'hook',
    kind: 'webhook_poll',
    agent: 'a',
    method: 'GET',
    url,
    status: 200,
    bytes: 5120,
    ms: 12,
    addresses: ['93.184.215.14'],
    detail: { phase: 'body', retry: false },
  },
});
const clean = record('https://api.example.org/v1/items');
const holding = record(`https://api.example.org/${SECRETS[1]}/items`);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function measure(format, rec, r) {
  for (let i = 0; i < 2_000; i++) formatRecord(rec, format, r);
  const bytes = [];
  const ns = [];
  for (let round = 0; round < 5; round++) {
    gc();
    gc();
    const h0 = process.memoryUsage().heapUsed;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) formatRecord(rec, format, r);
    const t1 = process.hrtime.bigint();
    bytes.push((process.memoryUsage().heapUsed - h0) / N);
    ns.push(Number(t1 - t0) / N);
  }
  return { bytes: median(bytes), ns: median(ns) };
}

console.log(`log: one debug line of 10 fields, ${N} lines x 5 rounds, medians; ${SECRETS.length} secrets`);
let ok = true;
for (const format of ['kv', 'json']) {
  const none = measure(format, clean, null);
  const miss = measure(format, clean, redact);
  const hit = measure(format, holding, redact);
  const extra = miss.bytes - none.bytes;
  // 1 % of a line: the measurement's own noise.
  const pass = extra <= none.bytes * 0.01;
  ok &&= pass;
  console.log(
    `  ${format.padEnd(4)} no redactor ${none.ns.toFixed(0)} ns ${none.bytes.toFixed(0)} B; secrets not in the line ${miss.ns.toFixed(0)} ns ${miss.bytes.toFixed(0)} B; a secret in the line ${hit.ns.toFixed(0)} ns ${hit.bytes.toFixed(0)} B`,
  );
  console.log(
    `       target: no new allocation without a secret in the line -> ${extra.toFixed(1)} B/line ${pass ? 'OK' : 'MISSED'}`,
  );
}
process.exit(ok ? 0 : 1);
