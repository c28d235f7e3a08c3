/**
 * AgentDojo's ground-truth traces (data/traces.json, data/README.md): the
 * shape of the file and its loading. No side effects.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../compiler/index.js';

/** How AgentDojo's tools are classified: only this is used to build the policy pack. */
export interface ToolClass {
  is_exit: boolean;
  reads_untrusted: boolean;
  reads_private: boolean;
}

export interface Call {
  function: string;
  args: Record<string, unknown>;
}

export interface UserTask {
  id: string;
  prompt: string;
  /** The injection vectors the task's calls read (where an attacker's text can appear). */
  vectors: string[];
  calls: Call[];
}

export interface InjectionTask {
  id: string;
  goal: string;
  calls: Call[];
}

export interface Suite {
  tools: Record<string, ToolClass>;
  user_tasks: UserTask[];
  injection_tasks: InjectionTask[];
  /** Per vector, the tools whose results carry it. */
  vector_readers: Record<string, string[]>;
}

export interface Traces {
  source: string;
  suites: Record<string, Suite>;
}

/** The shipped traces (or another file in the same format). */
export function loadTraces(path = join(packageRoot(), 'bench', 'agentdojo', 'data', 'traces.json')): Traces {
  return JSON.parse(readFileSync(path, 'utf8')) as Traces;
}
