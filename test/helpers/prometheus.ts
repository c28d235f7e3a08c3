/**
 * Reading GET /metrics in tests: the Prometheus text exposition parsed into
 * samples, and one sample's value by its exact labels.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample of an exposition (comments skipped; a line that does not parse throws). */
export function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the sample with exactly these labels (0 when absent). */
export function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const keys = Object.keys(labels);
  const s = samples.find(
    (x) =>
      x.name === name && Object.keys(x.labels).length === keys.length && keys.every((k) => x.labels[k] === labels[k]),
  );
  return s?.value ?? 0;
}
