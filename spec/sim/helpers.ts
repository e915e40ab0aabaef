// Shared bits of the sim specs: starting a sim through the real CLI, reading its
// Prometheus text, and building prompts of an exact token length.

import { request } from 'undici';
import { startProcess, type Started } from '../support/process.js';

export interface SimProcess extends Started {
  url: string;
}

/** `llmgw run --role=sim --listen 127.0.0.1:0 --model MODEL ...extra`, ready to serve. */
export async function startSim(model: string, extra: string[]): Promise<SimProcess> {
  const p = await startProcess(['run', '--role=sim', '--listen', '127.0.0.1:0', '--model', model, ...extra], {
    waitFor: /^llmgw sim (\S+) listening on (http:\/\/\S+)$/,
  });
  return Object.assign(p, { url: p.match[2]! });
}

/** One sample per series: `name{labels}` → value, labels as printed. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseProm(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

export async function scrape(url: string): Promise<{ text: string; samples: Sample[]; contentType: string }> {
  const res = await request(`${url}/metrics`);
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}: ${text}`);
  return { text, samples: parseProm(text), contentType: String(res.headers['content-type']) };
}

/** Sum of the series called `name` whose labels include `labels`; NaN when there is none. */
export function value(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  let sum = NaN;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (!Object.entries(labels).every(([k, v]) => s.labels[k] === v)) continue;
    sum = (Number.isNaN(sum) ? 0 : sum) + s.value;
  }
  return sum;
}

/** Reads one metric from a live engine. */
export async function metric(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  return value((await scrape(url)).samples, name, labels);
}

/**
 * `n` distinct words that are one token each for the sim's tokenizer, unique to `salt`:
 * the same salt gives the same text, another salt a prompt of the same length that
 * shares no KV block with it.
 */
export function words(n: number, salt: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(letters(salt * 1_000_003 + i));
  return out.join(' ');
}

function letters(k: number): string {
  let s = '';
  do {
    s += String.fromCharCode(97 + (k % 26));
    k = Math.floor(k / 26);
  } while (k > 0);
  return s;
}

export function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
