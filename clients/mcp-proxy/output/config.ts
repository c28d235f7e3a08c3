/**
 * The `output:` section of a server's proxy configuration (docs/mcp.md#what-the-gateway-reads-in-results):
 * labels by tool, whether the server's own labels count, and the detectors.
 *
 * ```yaml
 * output:
 *   labels:
 *     - { tools: ["inbox_*", "web_fetch"], labels: [untrusted] }
 *     - { tools: [files_read], labels: [private] }
 *   server_labels: false       # true: honour _meta["agent-authz/labels"] in results
 *   detect: { secrets: redact, pii: label }   # per detector: label | redact | block (absent: off)
 *   phone_regions: [US, GB]    # where nationally written phone numbers count (default US)
 * ```
 */
import { isSupportedCountry, type CountryCode } from 'libphonenumber-js/max';
import { DEFAULT_PHONE_REGIONS } from './pii.js';

/** What a detector does with what it finds. */
export type DetectMode = 'label' | 'redact' | 'block';
export const DETECT_MODES: readonly DetectMode[] = ['label', 'redact', 'block'];
/** The detectors, by name; each adds its label (`secret`, `pii`). */
export const DETECTORS = { secrets: 'secret', pii: 'pii' } as const;
export type DetectorName = keyof typeof DETECTORS;

/** A label: what a session has read (docs/policies.md). */
export const LABEL_PATTERN = /^[a-z][a-z0-9_.-]{0,63}$/;

export interface OutputConfig {
  /** Labels every result of the matching tools carries (globs: `*` any characters, compiler/patterns/glob.ts). */
  labels: Array<{ tools: string[]; labels: string[] }>;
  /** Honour the labels a server puts in a result's `_meta["agent-authz/labels"]`. */
  server_labels: boolean;
  detect: Partial<Record<DetectorName, DetectMode>>;
  /** Where nationally written phone numbers are looked for. */
  phone_regions: CountryCode[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const FIELDS = new Set(['labels', 'server_labels', 'detect', 'phone_regions']);

/**
 * Checks the `output:` value; problems go to `problems` (prefixed `output.`).
 *
 * @example
 * ```ts
 * const problems: string[] = [];
 * const output = parseOutputConfig({ labels: [{ tools: ['inbox_*'], labels: ['untrusted'] }], detect: { pii: 'redact' } }, problems);
 * console.log(output?.detect, problems); // => { pii: 'redact' } []
 * ```
 */
export function parseOutputConfig(raw: unknown, problems: string[]): OutputConfig | undefined {
  if (raw === undefined) return undefined;
  if (!isRecord(raw)) {
    problems.push('output: a mapping with labels, server_labels, detect and/or phone_regions');
    return undefined;
  }
  for (const key of Object.keys(raw))
    if (!FIELDS.has(key)) problems.push(`output: unknown field "${key}" (known: ${[...FIELDS].join(', ')})`);
  const labels: OutputConfig['labels'] = [];
  const rawLabels = raw.labels ?? [];
  if (!Array.isArray(rawLabels)) problems.push('output.labels: a list of { tools: [...], labels: [...] }');
  else
    rawLabels.forEach((entry: unknown, i) => {
      const at = `output.labels[${i}]`;
      if (!isRecord(entry)) return problems.push(`${at}: a mapping { tools: [...], labels: [...] }`);
      for (const key of Object.keys(entry))
        if (key !== 'tools' && key !== 'labels') problems.push(`${at}: unknown field "${key}" (known: tools, labels)`);
      const tools = entry.tools;
      const names = entry.labels;
      const toolsOk = Array.isArray(tools) && tools.length > 0 && tools.every((t) => typeof t === 'string' && t !== '');
      if (!toolsOk) problems.push(`${at}.tools: a non-empty list of tool names or globs ("inbox_*")`);
      const labelsOk =
        Array.isArray(names) && names.length > 0 && names.every((l) => typeof l === 'string' && LABEL_PATTERN.test(l));
      if (!labelsOk) problems.push(`${at}.labels: a non-empty list of labels, each [a-z][a-z0-9_.-]{0,63}`);
      if (toolsOk && labelsOk) labels.push({ tools: tools as string[], labels: [...new Set(names as string[])] });
      return undefined;
    });
  const serverLabels = raw.server_labels ?? false;
  if (typeof serverLabels !== 'boolean') problems.push('output.server_labels: true or false');
  const detect: OutputConfig['detect'] = {};
  if (raw.detect !== undefined) {
    if (!isRecord(raw.detect))
      problems.push(
        `output.detect: a mapping from detectors (${Object.keys(DETECTORS).join(', ')}) to ${DETECT_MODES.join(' | ')}`,
      );
    else
      for (const [name, mode] of Object.entries(raw.detect)) {
        if (!Object.hasOwn(DETECTORS, name))
          problems.push(`output.detect: unknown detector "${name}" (known: ${Object.keys(DETECTORS).join(', ')})`);
        else if (typeof mode !== 'string' || !DETECT_MODES.includes(mode as DetectMode))
          problems.push(`output.detect.${name}: one of ${DETECT_MODES.join(', ')}`);
        else detect[name as DetectorName] = mode as DetectMode;
      }
  }
  const regions = raw.phone_regions ?? DEFAULT_PHONE_REGIONS;
  if (!Array.isArray(regions) || regions.some((r) => typeof r !== 'string' || !isSupportedCountry(r))) {
    problems.push('output.phone_regions: a list of ISO 3166 country codes (US, GB, DE...)');
  }
  return {
    labels,
    server_labels: serverLabels === true,
    detect,
    phone_regions: Array.isArray(regions) ? (regions as CountryCode[]) : [...DEFAULT_PHONE_REGIONS],
  };
}
