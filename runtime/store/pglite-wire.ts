/**
 * An in-process PostgreSQL wire connection to PGlite, for postgres.js's
 * `socket` option: the embedded store is reached without any listener (no TCP
 * port, no Unix socket), so no other local user or process can connect to it.
 *
 * The client writes frontend messages into the stream; each complete message
 * (the startup message first, then `type + int32 length` messages) is run by
 * PGlite's `execProtocolRawStream`, one at a time under `runExclusive`, and
 * PGlite's answer bytes are pushed back as the stream's readable side. A
 * `Terminate` ('X') or the end of the writable side ends the connection; a
 * transaction left open by a connection that goes away is rolled back.
 *
 *   const sql = postgres({ socket: () => new PGliteWire(db), max: 1, ssl: false });
 */
import { Duplex } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';

const PROTOCOL_3 = 196608;
const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
const TERMINATE = 0x58; // 'X'

/** The connection that ran the last message on each database: the owner of an open transaction. */
const lastWire = new WeakMap<PGlite, PGliteWire>();

export class PGliteWire extends Duplex {
  /** What postgres.js's error messages print as host and port. */
  readonly host = 'pglite';
  readonly port = 0;
  private buffered: Buffer = Buffer.alloc(0);
  private started = false;

  constructor(private readonly db: PGlite) {
    super({ allowHalfOpen: false });
  }

  /** net.Socket's readyState, as postgres.js reads it before sending Terminate. */
  get readyState(): 'open' | 'closed' {
    return this.destroyed || this.writableEnded ? 'closed' : 'open';
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  override _read(): void {
    // Answers are pushed as PGlite produces them.
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    this.drain().then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.push(null);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.rollbackIfOpen().then(
      () => callback(error),
      () => callback(error),
    );
  }

  /** Runs every complete message in the buffer, in order. */
  private async drain(): Promise<void> {
    for (;;) {
      const message = this.nextMessage();
      if (!message) return;
      if (message === 'end') {
        if (!this.writableEnded) this.end();
        return;
      }
      if (message === 'ssl') {
        this.push(Buffer.from('N'));
        continue;
      }
      lastWire.set(this.db, this);
      await this.db.runExclusive(() =>
        this.db.execProtocolRawStream(new Uint8Array(message), {
          onRawData: (data) => {
            if (data.length > 0 && !this.destroyed) this.push(Buffer.from(data));
          },
        }),
      );
    }
  }

  /** The next complete message, 'ssl' for an SSLRequest, 'end' for Terminate or CancelRequest; null when more bytes are needed. */
  private nextMessage(): Buffer | 'ssl' | 'end' | null {
    const b = this.buffered;
    if (!this.started) {
      if (b.length < 8) return null;
      const length = b.readInt32BE(0);
      const code = b.readInt32BE(4);
      if (length < 8 || b.length < length) return null;
      this.buffered = b.subarray(length);
      if (code === SSL_REQUEST) return 'ssl';
      // PGlite has no backend to signal: a cancel request only closes its own connection.
      if (code === CANCEL_REQUEST) return 'end';
      if (code !== PROTOCOL_3) throw new Error(`embedded store: unsupported startup code ${code}`);
      this.started = true;
      return b.subarray(0, length);
    }
    if (b.length < 5) return null;
    const length = 1 + b.readInt32BE(1);
    if (b.length < length) return null;
    this.buffered = b.subarray(length);
    if (b[0] === TERMINATE) return 'end';
    return b.subarray(0, length);
  }

  /** A connection that goes away inside a transaction must not leave PGlite's one session in it. */
  private async rollbackIfOpen(): Promise<void> {
    if (lastWire.get(this.db) !== this || this.db.closed) return;
    lastWire.delete(this.db);
    // exec takes PGlite's locks itself (inside runExclusive it would wait forever).
    if (this.db.isInTransaction()) await this.db.exec('rollback');
  }
}
