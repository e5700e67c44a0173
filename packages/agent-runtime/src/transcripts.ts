/**
 * Session transcripts: one JSONL file per session in the agent's `transcriptsDir`. Each record is
 * written with one append of a whole line; a torn last line left by a crash is cut off before the
 * first append of this process, so a file only ever holds complete lines.
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';

export type TranscriptRecordType =
  | 'inbound'
  | 'model_call'
  | 'tool_call'
  | 'tool_result'
  | 'outbound'
  | 'turn_error'
  | 'turn_dropped'
  /** The turn ended without an answer; its message is run again (`InboundOutcome` `'retry'`). */
  | 'turn_handed_back';

export interface TranscriptRecord {
  ts: string;
  type: TranscriptRecordType;
  snapshot_version: number;
  [field: string]: unknown;
}

export interface SessionKey {
  agentId: string;
  bindingIndex: number;
  plugin: string;
  instance: string;
  chatId: string;
}

/** `<agent>|<binding>|<plugin>|<instance>|<chat>`: the key of memory rows and the session map. */
export function sessionKeyString(k: SessionKey): string {
  return [k.agentId, k.bindingIndex, k.plugin, k.instance, k.chatId].join('|');
}

/**
 * File name of a session's transcript: `b<binding>-<plugin>-<instance>-<chat>.jsonl`, with
 * characters outside `[A-Za-z0-9_.-]` replaced by `_` and, when anything was replaced, a short hash
 * of the real ids so that two chats never share a file. With `daemonId` (cluster mode), the file is that
 * daemon's part of the session: `….<daemon_id>.jsonl`, so daemons sharing a disk never write one file.
 */
export function transcriptFileName(k: SessionKey, daemonId?: string): string {
  const raw = `b${k.bindingIndex}-${k.plugin}-${k.instance}-${k.chatId}`;
  const safe = raw.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 120);
  const ext = daemonId === undefined ? '.jsonl' : `.${daemonId.replace(/[^A-Za-z0-9_.-]/g, '_')}.jsonl`;
  if (safe === raw) return `${raw}${ext}`;
  const hash = createHash('sha256').update(sessionKeyString(k)).digest('hex').slice(0, 10);
  return `${safe}-${hash}${ext}`;
}

/** Cuts a torn last line (no trailing newline) left by a crash. */
function repairTail(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch {
    return; // not there yet
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return;
    const chunk = Buffer.alloc(Math.min(size, 64 * 1024));
    let pos = size;
    // Walk back to the last newline.
    while (pos > 0) {
      const len = Math.min(chunk.length, pos);
      readSync(fd, chunk, 0, len, pos - len);
      const nl = chunk.subarray(0, len).lastIndexOf(0x0a);
      if (nl >= 0) {
        const keep = pos - len + nl + 1;
        if (keep !== size) ftruncateSync(fd, keep);
        return;
      }
      pos -= len;
    }
    ftruncateSync(fd, 0);
  } finally {
    closeSync(fd);
  }
}

export class TranscriptWriter {
  /** `daemonId`: name the files per daemon (see `transcriptFileName`). */
  constructor(private readonly daemonId?: string) {}

  private readonly repaired = new Set<string>();
  private readonly chains = new Map<string, Promise<void>>();

  /** Appends whole lines in order per file; resolves when written. Never throws (errors go to `onError`). */
  append(
    dir: string,
    key: SessionKey,
    records: readonly TranscriptRecord[],
    onError: (e: unknown) => void,
  ): Promise<void> {
    const path = join(dir, transcriptFileName(key, this.daemonId));
    const prev = this.chains.get(path) ?? Promise.resolve();
    const next = prev.then(async () => {
      try {
        if (!this.repaired.has(path)) {
          mkdirSync(dir, { recursive: true });
          repairTail(path);
          this.repaired.add(path);
        }
        // One write call for all lines of this batch: each line is complete or absent.
        await appendFile(path, records.map((r) => JSON.stringify(r) + '\n').join(''), {
          encoding: 'utf8',
          mode: 0o600,
        });
      } catch (err) {
        onError(err);
      }
    });
    this.chains.set(path, next);
    void next.then(() => {
      if (this.chains.get(path) === next) this.chains.delete(path);
    });
    return next;
  }

  /** Resolves when every pending append is written. */
  async flush(): Promise<void> {
    await Promise.all(this.chains.values());
  }
}
