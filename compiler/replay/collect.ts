/**
 * Where replay results go until the report is printed, in bounded memory:
 * - a spool file (in the system's temp folder) for the `--format json` list of
 *   changes, however many there are, read back line by line when printing;
 * - a ring of the last N results for `--limit N` (the export comes oldest first,
 *   and only the newest N count): memory grows with N, never with the stream.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Outcome, ReplayResult } from './replay.js';

/** One entry of `changes` in `--format json`. */
export interface ChangeRecord {
  decision_id: string;
  from: Outcome;
  to: Outcome;
  pre_table?: true;
}

export function changeRecord(r: ReplayResult): ChangeRecord {
  return { decision_id: r.decision_id, from: r.from, to: r.to, ...(r.pre_table ? { pre_table: true as const } : {}) };
}

const FLUSH_AT = 64 * 1024;

/** Change records written to a temp file as they come, one JSON line each. */
export class ChangeSpool {
  private readonly dir = mkdtempSync(join(tmpdir(), 'authz-replay-'));
  private readonly fd = openSync(join(this.dir, 'changes.ndjson'), 'w+');
  private pending = '';
  private written = 0;
  count = 0;

  add(record: ChangeRecord): void {
    this.pending += `${JSON.stringify(record)}\n`;
    this.count++;
    if (this.pending.length >= FLUSH_AT) this.flush();
  }

  private flush(): void {
    if (this.pending === '') return;
    const bytes = Buffer.from(this.pending);
    writeSync(this.fd, bytes, 0, bytes.length, this.written);
    this.written += bytes.length;
    this.pending = '';
  }

  /** Calls `onLine` with each record's JSON text, in order. */
  forEach(onLine: (json: string, last: boolean) => void): void {
    this.flush();
    const chunk = Buffer.alloc(1 << 20);
    const decoder = new TextDecoder('utf-8');
    let position = 0;
    let rest = '';
    let seen = 0;
    for (;;) {
      const n = readSync(this.fd, chunk, 0, chunk.length, position);
      if (n === 0) break;
      position += n;
      const lines = (rest + decoder.decode(chunk.subarray(0, n), { stream: true })).split('\n');
      rest = lines.pop()!;
      for (const line of lines) onLine(line, ++seen === this.count);
    }
  }

  close(): void {
    closeSync(this.fd);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The last `size` items pushed. */
export class LastN<T> {
  private readonly items: T[] = [];
  private next = 0;

  constructor(private readonly size: number) {}

  push(item: T): void {
    if (this.items.length < this.size) this.items.push(item);
    else {
      this.items[this.next] = item;
      this.next = (this.next + 1) % this.size;
    }
  }

  /** Oldest first. */
  values(): T[] {
    return [...this.items.slice(this.next), ...this.items.slice(0, this.next)];
  }
}
