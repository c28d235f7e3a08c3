/**
 * Permit signing off the event loop (AUTHZ_SIGN_WORKER=1, off by default; an
 * experiment of issue 51: bench/permits/sign-worker.ts measures it). One
 * `worker_threads` thread per process signs with libsodium what the main thread
 * hands it: the sign requests of one event-loop turn go in one message (their
 * signing inputs joined by newlines, which base64url never holds), flushed by
 * setImmediate; the answer is one transferred buffer of 64-byte signatures.
 * A private key crosses once per kid (transferred, then zeroed). Ed25519 is
 * deterministic, so the tokens are byte-identical to sign.ts's. Should the
 * thread fail, what it had not answered is signed on the main thread, and so
 * is everything after.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { KeyMaterial } from './key-material.js';
import { signedToken } from './sign.js';

/**
 * The thread's code (CommonJS, evaluated: no file to find from the sources or
 * from dist/). Messages in: `{ slot, key }` (a private key for a slot), `{ id,
 * inputs, slots }` (a batch); out: `{ id, signatures }`.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const sodium = require(workerData.sodium);
const BYTES = sodium.crypto_sign_BYTES;
const keys = [];
parentPort.on('message', (m) => {
  if (m.key) {
    const key = sodium.sodium_malloc(sodium.crypto_sign_SECRETKEYBYTES);
    const sent = new Uint8Array(m.key);
    key.set(sent);
    sent.fill(0);
    keys[m.slot] = key;
    return;
  }
  const inputs = m.inputs.split('\\n');
  const out = new ArrayBuffer(inputs.length * BYTES);
  for (let i = 0; i < inputs.length; i++)
    sodium.crypto_sign_detached(Buffer.from(out, i * BYTES, BYTES), Buffer.from(inputs[i]), keys[m.slots[i]]);
  parentPort.postMessage({ id: m.id, signatures: out }, [out]);
});
`;

const SIGNATURE_BYTES = 64;

interface Pending {
  input: string;
  key: KeyMaterial;
  resolve: (token: string) => void;
}

/** What a signer has done: batches sent to the thread, tokens in them, tokens signed on the main thread (after a failure or close). */
export interface SignWorkerStats {
  batches: number;
  tokens: number;
  fallback: number;
}

export class SignWorker {
  private worker: Worker | null;
  private queue: Pending[] = [];
  private readonly sent = new Map<number, Pending[]>();
  private readonly slots = new Map<string, number>();
  private nextId = 0;
  private flushing = false;
  private outstanding = 0;
  readonly stats: SignWorkerStats = { batches: 0, tokens: 0, fallback: 0 };

  constructor() {
    const sodiumPath = createRequire(import.meta.url).resolve('sodium-native');
    this.worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { sodium: sodiumPath } });
    this.worker.unref();
    this.worker.on('message', (m: { id: number; signatures: ArrayBuffer }) => this.answered(m));
    this.worker.on('error', () => this.fail());
    this.worker.on('exit', () => this.fail());
  }

  /**
   * The compact JWS of `signingInput` signed with `key`: the same bytes as
   * sign.ts's signedToken, answered after the thread signed this turn's batch.
   *
   * @example
   * const token = await signer.sign(permitSigningInput(claims, key.kid), key);
   */
  sign(signingInput: string, key: KeyMaterial): Promise<string> {
    return new Promise((resolve) => {
      if (!this.worker) {
        this.stats.fallback++;
        return resolve(signedToken(signingInput, key.signingKey));
      }
      this.queue.push({ input: signingInput, key, resolve });
      if (this.outstanding++ === 0) this.worker.ref();
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /**
   * Ends the thread; what it had not answered is signed here, and so is every
   * token after.
   *
   * @example
   * await signer.close(); // signer.sign(...) still answers, on the main thread
   */
  async close(): Promise<void> {
    const worker = this.worker;
    this.fail();
    await worker?.terminate();
  }

  private slotOf(key: KeyMaterial, worker: Worker): number {
    let slot = this.slots.get(key.kid);
    if (slot === undefined) {
      slot = this.slots.size;
      this.slots.set(key.kid, slot);
      const copy = new Uint8Array(key.signingKey).buffer;
      worker.postMessage({ slot, key: copy }, [copy]);
    }
    return slot;
  }

  private flush(): void {
    this.flushing = false;
    const batch = this.queue;
    this.queue = [];
    if (!this.worker || batch.length === 0) return this.signHere(batch);
    const worker = this.worker;
    const slots = batch.map((p) => this.slotOf(p.key, worker));
    const id = this.nextId++;
    this.sent.set(id, batch);
    this.stats.batches++;
    this.stats.tokens += batch.length;
    worker.postMessage({ id, inputs: batch.map((p) => p.input).join('\n'), slots });
  }

  private answered(m: { id: number; signatures: ArrayBuffer }): void {
    const batch = this.sent.get(m.id);
    if (!batch) return;
    this.sent.delete(m.id);
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i]!;
      p.resolve(`${p.input}.${Buffer.from(m.signatures, i * SIGNATURE_BYTES, SIGNATURE_BYTES).toString('base64url')}`);
    }
    this.settled(batch.length);
  }

  private settled(n: number): void {
    this.outstanding -= n;
    if (this.outstanding === 0) this.worker?.unref();
  }

  /** The thread failed or ended: everything it holds or would get is signed on the main thread. */
  private fail(): void {
    if (!this.worker) return;
    this.worker.removeAllListeners('message');
    this.worker = null;
    const left = [...this.sent.values()].flat();
    this.sent.clear();
    this.signHere(left);
  }

  private signHere(batch: Pending[]): void {
    this.stats.fallback += batch.length;
    for (const p of batch) p.resolve(signedToken(p.input, p.key.signingKey));
    this.outstanding = Math.max(0, this.outstanding - batch.length);
  }
}

let shared: SignWorker | null = null;

/**
 * The process's one signing thread (started at the first call): every key ring
 * of the process shares it, and it keeps the key of every kid it was sent.
 *
 * @example
 * const token = await sharedSignWorker().sign(permitSigningInput(claims, key.kid), key);
 */
export function sharedSignWorker(): SignWorker {
  return (shared ??= new SignWorker());
}
