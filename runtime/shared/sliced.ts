/**
 * Runs a stepped computation (the compiler's *Steps generators) in slices of a
 * few milliseconds, giving the event loop back between slices, so that a large
 * recompile does not stall the requests being served meanwhile. Slices are
 * measured with the monotonic timer: this is scheduling, not service time.
 */
export const SLICE_MS = 4;

export async function runSliced<T>(steps: Generator<void, T>, sliceMs = SLICE_MS): Promise<T> {
  let sliceStart = performance.now();
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}

/**
 * Gives the event loop a turn before going on. Between two store calls this
 * matters on the embedded store: it answers in-process, so a run of calls can
 * complete in microtasks alone and starve every other request meanwhile.
 *
 * @example
 * for (const chunk of chunks) {
 *   await write(chunk);
 *   await nextTurn(); // requests waiting are served here
 * }
 */
export function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
