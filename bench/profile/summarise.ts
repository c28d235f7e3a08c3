/**
 * Reads a V8 .cpuprofile (node --cpu-prof) into self-time tables: by function
 * (name, file, line) and by package (node_modules/<pkg>, node: internals, ours by
 * top folder), as text for the terminal and the issue note.
 */
export interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: CpuProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Where a frame's code lives: a package, a node internal, our top folder, or a V8 pseudo-frame. */
export function frameOwner(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return 'node (internals)';
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return `ours: ${url.slice(dist + '/dist/'.length).split('/')[0]}/`;
  return url;
}

function table(rows: Array<[string, number]>, total: number, top: number, heading: string): string {
  const lines = [`| ${heading} | self ms | % |`, '| --- | ---: | ---: |'];
  for (const [k, us] of rows.slice(0, top))
    lines.push(`| ${k} | ${(us / 1000).toFixed(0)} | ${((100 * us) / total).toFixed(1)} |`);
  return lines.join('\n');
}

/** Self time per function and per owner, largest first. */
export function summariseProfile(profile: CpuProfile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const byFunction = new Map<string, number>();
  const byOwner = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    total += us;
    const short = url.includes('node_modules/')
      ? url.slice(url.lastIndexOf('node_modules/') + 13)
      : url.includes('/dist/')
        ? url.slice(url.indexOf('/dist/') + 6)
        : url;
    const key = `${functionName || '(anonymous)'} ${short ? `${short}:${lineNumber + 1}` : ''}`.trim();
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const owner = frameOwner(url, functionName);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + us);
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  const wall = profile.endTime - profile.startTime;
  return [
    `busy ${(total / 1000).toFixed(0)} ms, idle ${(idle / 1000).toFixed(0)} ms of ${(wall / 1000).toFixed(0)} ms profiled (${((100 * total) / Math.max(1, total + idle)).toFixed(0)}% busy)`,
    '',
    table(sorted(byOwner), total, top, 'owner'),
    '',
    table(sorted(byFunction), total, top, 'function'),
  ].join('\n');
}
