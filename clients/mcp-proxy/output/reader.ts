/**
 * What the gateway reads in one result (docs/mcp.md#what-the-gateway-reads-in-results): the text of a
 * `tools/call` result, `resources/read` contents or `prompts/get` messages
 * (text content, `structuredContent` as JSON text, embedded resources' text,
 * blobs of a textual MIME type; images, audio and other blobs are skipped and
 * counted), the labels it carries (by tool, by the tool's annotations, by the
 * server where trusted) and what the detectors find, with the result to relay:
 * as it came, redacted, or blocked.
 */
import { matchGlob } from '../../../compiler/patterns/glob.js';
import { DETECTORS, LABEL_PATTERN, type DetectMode, type DetectorName, type OutputConfig } from './config.js';
import { findPii } from './pii.js';
import { findSecrets } from './secrets.js';
import { redacted, type Span } from './spans.js';

/** The methods whose results are read. */
export const READ_METHODS = new Set(['tools/call', 'resources/read', 'prompts/get']);
/** The `_meta` key under which a server may declare its result's labels (honoured with `server_labels: true`). */
export const META_LABELS = 'agent-authz/labels';
/** Most labels and findings one record carries (the route's limits). */
const MAX_LABELS = 32;
const MAX_FINDINGS = 64;

/** One rule's findings in a result and what was done (the route's `findings` item). */
export interface OutputFinding {
  kind: string;
  rule: string;
  count: number;
  action: DetectMode | 'skipped';
}

/** What reading a result found, and what to relay. */
export interface ReadOutcome {
  /** Labels the result adds to the session (none when blocked). */
  labels: string[];
  findings: OutputFinding[];
  /** The detectors' labels that blocked the result (`secret`, `pii`); empty: relay `result`. */
  blockedBy: string[];
  /** The result to relay: the upstream's, or a redacted copy. */
  result: Record<string, unknown>;
}

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A text inside a result: where it is read from and how a redacted text is written back. */
interface Slot {
  text: string;
  /** A JSON document (structuredContent). */
  json: boolean;
  write(text: string): void;
}

/** Thrown when a redacted JSON document no longer parses: the result is then blocked. */
class UnredactableError extends Error {}

/**
 * Whether a MIME type is textual (a blob of it is read as UTF-8).
 *
 * @example
 * ```ts
 * console.log(isTextualMime('application/json'), isTextualMime('image/png')); // => true false
 * ```
 */
export function isTextualMime(mime: unknown): boolean {
  if (typeof mime !== 'string') return false;
  const type = mime.split(';')[0]!.trim().toLowerCase();
  return (
    type.startsWith('text/') ||
    /^application\/(?:json|xml|yaml|x-yaml|javascript|ecmascript|x-www-form-urlencoded|graphql|sql|toml|csv|x-sh|ld\+json)$/.test(
      type,
    ) ||
    /^application\/[\w.-]+\+(?:json|xml|yaml)$/.test(type)
  );
}

export class OutputReader {
  readonly #config: OutputConfig;
  /** Per tool: whether its annotations say it reaches the open world (absent: true, as in MCP). */
  readonly #openWorld = new Map<string, boolean>();

  constructor(config: OutputConfig) {
    this.#config = config;
  }

  /** Notes the upstream's tools' annotations (from each `tools/list` answer). */
  noteTools(tools: ReadonlyArray<{ name: string; annotations?: { openWorldHint?: boolean } | undefined }>): void {
    for (const tool of tools) this.#openWorld.set(tool.name, tool.annotations?.openWorldHint !== false);
  }

  /** The labels every result of `tool` carries: the configuration's, else `untrusted` unless its annotations say it stays closed. */
  toolLabels(tool: string): string[] {
    const named = this.#config.labels.filter((entry) => entry.tools.some((glob) => matchGlob(glob, tool)));
    if (named.length > 0) return [...new Set(named.flatMap((entry) => entry.labels))];
    return this.#openWorld.get(tool) === false ? [] : ['untrusted'];
  }

  /**
   * Reads one result of `method` (`tool`: the tool called, for `tools/call`).
   *
   * @example
   * ```ts
   * const reader = new OutputReader({ labels: [], server_labels: false, detect: { pii: 'redact' }, phone_regions: ['US'] });
   * const outcome = reader.read('tools/call', 'inbox_read', { content: [{ type: 'text', text: 'from ada@example.org' }] });
   * console.log(outcome.labels, outcome.result.content); // => [ 'untrusted', 'pii' ] [ { type: 'text', text: 'from [redacted:pii]' } ]
   * ```
   */
  read(method: string, tool: string | undefined, upstream: Json): ReadOutcome {
    const detecting = Object.keys(this.#config.detect).length > 0;
    const labels = new Set<string>(method === 'tools/call' && tool !== undefined ? this.toolLabels(tool) : []);
    if (this.#config.server_labels && isRecord(upstream._meta)) {
      const declared = upstream._meta[META_LABELS];
      if (Array.isArray(declared))
        for (const l of declared) if (typeof l === 'string' && LABEL_PATTERN.test(l)) labels.add(l);
    }
    if (!detecting) return { labels: [...labels].slice(0, MAX_LABELS), findings: [], blockedBy: [], result: upstream };

    const skipped = new Map<string, number>();
    // Read in place; a copy is made only to redact.
    const slots = slotsOf(method, upstream, skipped);
    const counts = new Map<string, { kind: string; rule: string; count: number; detector: DetectorName }>();
    const perSlot: Span[][] = [];
    for (const slot of slots) {
      const spans = this.#detect(slot);
      perSlot.push(spans);
      for (const span of spans) {
        const key = `${span.kind}\u0000${span.rule}`;
        const seen = counts.get(key);
        if (seen) seen.count++;
        else
          counts.set(key, {
            kind: span.kind,
            rule: span.rule,
            count: 1,
            detector: span.kind === 'secret' ? 'secrets' : 'pii',
          });
      }
    }
    const modeOf = (detector: DetectorName) => this.#config.detect[detector]!;
    const findings: OutputFinding[] = [...counts.values()].map((c) => ({
      kind: c.kind,
      rule: c.rule,
      count: c.count,
      action: modeOf(c.detector),
    }));
    for (const [rule, count] of skipped) findings.push({ kind: 'skipped', rule, count, action: 'skipped' });
    const found = new Set([...counts.values()].map((c) => c.detector));
    const blockedBy = [...found].filter((d) => modeOf(d) === 'block').map((d) => DETECTORS[d]);
    const capped = findings.slice(0, MAX_FINDINGS);
    if (blockedBy.length > 0) return { labels: [], findings: capped, blockedBy, result: upstream };

    for (const detector of found) labels.add(DETECTORS[detector]);
    const redacting = new Set([...found].filter((d) => modeOf(d) === 'redact').map((d) => DETECTORS[d] as string));
    if (redacting.size === 0)
      return { labels: [...labels].slice(0, MAX_LABELS), findings: capped, blockedBy: [], result: upstream };
    const result = structuredClone(upstream) as Json;
    // The copy's slots, in the same order as the upstream's.
    const copies = slotsOf(method, result, new Map());
    try {
      slots.forEach((slot, i) => {
        const spans = perSlot[i]!.filter((s) => redacting.has(s.kind));
        if (spans.length > 0) copies[i]!.write(redacted(slot.text, spans));
      });
    } catch (error) {
      if (!(error instanceof UnredactableError)) throw error;
      return {
        labels: [],
        findings: capped.map((f) => (redacting.has(f.kind) ? { ...f, action: 'block' } : f)),
        blockedBy: [...redacting],
        result: upstream,
      };
    }
    return { labels: [...labels].slice(0, MAX_LABELS), findings: capped, blockedBy: [], result };
  }

  #detect(slot: Slot): Span[] {
    const { secrets, pii } = this.#config.detect;
    const spans: Span[] = [];
    if (secrets) spans.push(...findSecrets(slot.text, slot.json));
    if (pii) spans.push(...findPii(slot.text, this.#config.phone_regions));
    return spans;
  }
}

/** The texts of a result that are read, in order; content that is not read is counted in `skipped` by type. */
function slotsOf(method: string, result: Json, skipped: Map<string, number>): Slot[] {
  const slots: Slot[] = [];
  const skip = (rule: string) => skipped.set(rule, (skipped.get(rule) ?? 0) + 1);
  /** An embedded resource or a resources/read entry: its text, or a textual blob. */
  const resource = (r: Json) => {
    if (typeof r.text === 'string') slots.push({ text: r.text, json: false, write: (t) => (r.text = t) });
    else if (typeof r.blob === 'string') {
      if (!isTextualMime(r.mimeType)) return skip('blob');
      slots.push({
        text: Buffer.from(r.blob, 'base64').toString('utf8'),
        json: false,
        write: (t) => (r.blob = Buffer.from(t, 'utf8').toString('base64')),
      });
    }
    return undefined;
  };
  const content = (item: unknown) => {
    if (!isRecord(item)) return;
    if (item.type === 'text' && typeof item.text === 'string')
      slots.push({ text: item.text, json: false, write: (t) => (item.text = t) });
    else if (item.type === 'resource' && isRecord(item.resource)) resource(item.resource);
    else if (item.type === 'image' || item.type === 'audio') skip(item.type);
    // resource_link: a reference, no content.
  };
  if (method === 'tools/call') {
    if (Array.isArray(result.content)) result.content.forEach(content);
    if (isRecord(result.structuredContent)) {
      slots.push({
        text: JSON.stringify(result.structuredContent),
        json: true,
        write: (t) => {
          try {
            result.structuredContent = JSON.parse(t) as Json;
          } catch {
            throw new UnredactableError('the redacted structuredContent is not JSON');
          }
        },
      });
    }
  } else if (method === 'resources/read') {
    if (Array.isArray(result.contents)) for (const entry of result.contents) if (isRecord(entry)) resource(entry);
  } else if (method === 'prompts/get' && Array.isArray(result.messages)) {
    for (const message of result.messages) {
      if (!isRecord(message)) continue;
      if (Array.isArray(message.content)) message.content.forEach(content);
      else content(message.content);
    }
  }
  return slots;
}
