/**
 * Reading NDJSON as it arrives: each complete line handed over as soon as its
 * chunk is in, nothing kept but the unfinished last line, so memory stays flat
 * however long the stream.
 */

/** Longest line accepted (a decision with a context near the 1 MiB body limit fits). */
export const MAX_LINE_CHARS = 4 * 1024 * 1024;

export class NdjsonError extends Error {}

/**
 * Calls `onLine` with each non-empty line of the stream (without its `\n` or
 * `\r\n`), synchronously as each chunk arrives; a last line without a final
 * newline counts too.
 *
 * @param chunks - the bytes, e.g. a fetch Response's body.
 * @param onLine - called once per line, in order.
 * @returns the number of lines.
 * @throws NdjsonError when a line exceeds {@link MAX_LINE_CHARS}; whatever the stream throws.
 */
export async function readNdjson(
  chunks: AsyncIterable<Uint8Array>,
  onLine: (line: string) => void,
  maxLine = MAX_LINE_CHARS,
): Promise<number> {
  const decoder = new TextDecoder('utf-8');
  let rest = '';
  let count = 0;
  const emit = (line: string) => {
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.length === 0) return;
    count++;
    onLine(line);
  };
  for await (const chunk of chunks) {
    const text = rest + decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      emit(text.slice(start, nl));
      start = nl + 1;
    }
    rest = start === 0 ? text : text.slice(start);
    if (rest.length > maxLine) throw new NdjsonError(`a line of the export is longer than ${maxLine} characters`);
  }
  emit(rest + decoder.decode());
  return count;
}
