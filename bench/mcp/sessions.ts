/**
 * `npm run bench:mcp-sessions`: the memory of `authz mcp-proxy --listen` under
 * a flood of MCP sessions (issue 30: with `--max-sessions 1000` and
 * `--session-idle-seconds 5`, the proxy's RSS after 20,000 `initialize` calls
 * and 10 s idle is within 50 MB of its RSS after the first 1,000).
 *
 * The proxy runs as its own process (`node bin/authz.js mcp-proxy --listen`)
 * in front of a Streamable HTTP MCP server in this process (the SDK's
 * McpServer, one session per client). Initialize calls are sent 20 at a time
 * until 20,000 have opened a session; a 503 (the cap) is retried after 100 ms.
 * The proxy's RSS (/proc/<pid>/status) is read after the first 1,000 sessions,
 * after the 20,000th, and after 10 s idle. After the first 1,000 and after
 * the idle (right after reading RSS), the proxy's heap is read too: the proxy
 * runs with --expose-gc and the bench-only preload memory-probe.ts, which on
 * SIGUSR2 prints `process.memoryUsage()` before and after a full GC; heap used
 * after a full GC only grows if something is retained, while RSS also keeps
 * what V8 and malloc hold. No GC is forced between the 20,000th session and the
 * idle reading, so the RSS figures are the proxy's own. The proxy as shipped
 * has neither flag nor preload. Nothing is decided: the service is never
 * called for an initialize. Writes its part of bench/mcp/REPORT.md and prints
 * the figures (JSON last).
 *
 *   node dist/bench/mcp/sessions.js [--sessions 20000] [--idle 5] [--max 1000]
 */
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { packageRoot } from '../../compiler/index.js';
import { startChild, stopChild } from '../../scripts/mcp-conformance.js';
import { SESSIONS_HEADING, writeSessionsPart } from './report-section.js';
import { startSessionUpstream } from './session-upstream.js';

const { values } = parseArgs({
  options: { sessions: { type: 'string' }, idle: { type: 'string' }, max: { type: 'string' } },
});
const SESSIONS = Number(values.sessions ?? 20_000);
const IDLE = Number(values.idle ?? 5);
const MAX = Number(values.max ?? 1000);
const CONCURRENCY = 20;

const rssMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const MiB = 1024 * 1024;

interface Memory {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** The proxy's memory before and after a full GC (memory-probe.ts answers SIGUSR2 with one line on stderr). */
async function probe(
  pid: number,
  output: string[],
): Promise<{ before: Memory; after: Memory; spaces: Record<string, number> }> {
  const seen = output.length;
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; waited < 10_000; waited += 20) {
    const line = output.slice(seen).find((l) => l.startsWith('memory-probe '));
    if (line)
      return JSON.parse(line.slice('memory-probe '.length)) as {
        before: Memory;
        after: Memory;
        spaces: Record<string, number>;
      };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the proxy did not answer the memory probe');
}

const tenth = (bytes: number) => Math.round((bytes / MiB) * 10) / 10;
const inMiB = ({ before, after, spaces }: { before: Memory; after: Memory; spaces: Record<string, number> }) => ({
  heap_total: tenth(before.heapTotal),
  heap_spaces: Object.fromEntries(Object.entries(spaces).map(([name, bytes]) => [name, tenth(bytes)])),
  heap_used: tenth(before.heapUsed),
  external: tenth(before.external),
  heap_used_after_gc: tenth(after.heapUsed),
  heap_total_after_gc: tenth(after.heapTotal),
  rss_after_gc: tenth(after.rss),
});

async function main(): Promise<void> {
  const upstream = await startSessionUpstream('bench-sessions');
  const dir = mkdtempSync(join(tmpdir(), 'authz-bench-sessions-'));
  writeFileSync(join(dir, 'mcp.yaml'), 'agent_id: bench-sessions\nserver: bench\n');
  const proxy = await startChild(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      pathToFileURL(fileURLToPath(new URL('./memory-probe.js', import.meta.url))).href,
      join(packageRoot(), 'bin', 'authz.js'),
      'mcp-proxy',
      '--config',
      join(dir, 'mcp.yaml'),
      '--listen',
      '127.0.0.1:0',
      '--upstream-url',
      upstream.url,
      '--url',
      'http://127.0.0.1:9',
      '--key',
      'svc_test_sk_never_called0000000000000000000000',
      '--max-sessions',
      String(MAX),
      '--session-idle-seconds',
      String(IDLE),
    ],
    { ready: (l) => /listening on (http:\/\/\S+)/.exec(l)?.[1] },
  );
  const pid = proxy.child.pid!;
  let opened = 0;
  let refused = 0;
  let rssAt1000 = 0;
  let heapAt1000: ReturnType<typeof probe> | undefined;
  const started = performance.now();
  const initialize = async (): Promise<void> => {
    for (;;) {
      const r = await fetch(proxy.value, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
        }),
      });
      await r.text();
      if (r.status === 200) return;
      if (r.status !== 503) throw new Error(`initialize: HTTP ${r.status}`);
      refused++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  try {
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (opened < SESSIONS) {
          opened++;
          await initialize();
          if (opened === 1000 && rssAt1000 === 0) {
            rssAt1000 = rssMiB(pid);
            heapAt1000 = probe(pid, proxy.output);
          }
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const rssAfterAll = rssMiB(pid);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const rssAfterIdle = rssMiB(pid);
    const heapAfterIdle = await probe(pid, proxy.output);
    const heap = { after_1000: inMiB(await heapAt1000!), after_10s_idle: inMiB(heapAfterIdle) };
    const figures = {
      sessions_opened: SESSIONS,
      refused_503: refused,
      seconds: Math.round(seconds),
      max_sessions: MAX,
      idle_seconds: IDLE,
      rss_mib_after_1000: Math.round(rssAt1000),
      rss_mib_after_all: Math.round(rssAfterAll),
      rss_mib_after_10s_idle: Math.round(rssAfterIdle),
      growth_mib: Math.round(rssAfterIdle - rssAt1000),
      upstream_sessions_left: upstream.sessions(),
      after_full_gc_mib: heap,
    };
    const met = Math.abs(rssAfterIdle - rssAt1000) * 1.048576 <= 50;
    const a = heap.after_1000;
    const z = heap.after_10s_idle;
    writeSessionsPart(
      [
        SESSIONS_HEADING,
        '',
        `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, Node ${process.version}, load averages ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')} at the end: ` +
          `the proxy (\`--listen\`, \`--max-sessions ${MAX}\`, \`--session-idle-seconds ${IDLE}\`) before a Streamable HTTP MCP server; ` +
          `${SESSIONS} \`initialize\` calls, ${CONCURRENCY} at a time (${refused} answered 503 at the cap and retried), in ${figures.seconds} s; then 10 s idle.`,
        '',
        '| proxy, MiB | after 1,000 sessions | after all | after 10 s idle |',
        '| --- | --- | --- | --- |',
        `| RSS | ${figures.rss_mib_after_1000} | ${figures.rss_mib_after_all} | ${figures.rss_mib_after_10s_idle} |`,
        `| V8 heap total (old space) | ${a.heap_total} (${a.heap_spaces.old_space}) | | ${z.heap_total} (${z.heap_spaces.old_space}) |`,
        `| V8 heap used | ${a.heap_used} | | ${z.heap_used} |`,
        `| V8 heap used after a full GC (bench probe) | ${a.heap_used_after_gc} | | ${z.heap_used_after_gc} |`,
        '',
        `**RSS after 10 s idle minus RSS after the first 1,000: ${figures.growth_mib >= 0 ? '+' : ''}${figures.growth_mib} MiB; target within 50 MB: ${met ? 'met' : 'NOT met'}.** ` +
          `Upstream sessions still open: ${figures.upstream_sessions_left}. The heap read by memory-probe.ts (a bench-only preload; \`--expose-gc\` for the probe alone) ` +
          'after the first 1,000 sessions and after the idle; no GC is forced between the 20,000th session and the idle RSS reading.',
        '',
      ].join('\n'),
    );
    process.stdout.write(
      `${SESSIONS} initialize calls opened sessions in ${figures.seconds} s (${refused} answered 503 at the cap of ${MAX}, retried); ` +
        `proxy RSS ${figures.rss_mib_after_1000} MiB after 1,000, ${figures.rss_mib_after_all} MiB after all, ${figures.rss_mib_after_10s_idle} MiB after 10 s idle ` +
        `(${figures.growth_mib >= 0 ? '+' : ''}${figures.growth_mib} MiB; target within 50 MB: ${met ? 'met' : 'NOT met'}); ` +
        `upstream sessions still open: ${figures.upstream_sessions_left}\n` +
        `V8 heap after 1,000 / after 10 s idle: used ${heap.after_1000.heap_used} / ${heap.after_10s_idle.heap_used} MiB of ${heap.after_1000.heap_total} / ${heap.after_10s_idle.heap_total} MiB, ` +
        `external ${heap.after_1000.external} / ${heap.after_10s_idle.external} MiB; after a full GC (bench probe): used ${heap.after_1000.heap_used_after_gc} / ${heap.after_10s_idle.heap_used_after_gc} MiB ` +
        `of ${heap.after_1000.heap_total_after_gc} / ${heap.after_10s_idle.heap_total_after_gc} MiB, RSS ${heap.after_1000.rss_after_gc} / ${heap.after_10s_idle.rss_after_gc} MiB\n${JSON.stringify(figures)}\n`,
    );
  } finally {
    await stopChild(proxy.child);
    upstream.close();
  }
}

await main();
