// Deterministic completions. The simulated engine does not model language, only its
// timing, but its output must be reproducible: the same engine seed and the same request
// give the same text, token for token, so specs and benchmarks can compare runs. Every
// emitted piece is exactly one token of the toy tokenizer, so `completion_tokens` and a
// re-tokenization of the text agree.

import { pieceId } from './tokenizer.js';

/** Words of at most 10 letters, so each `' ' + word` is one token. */
const WORDS = (
  'the of and to in is that it for as with was on be by this are from at or an which have ' +
  'not has but were can all their more one will also been other its into when some these ' +
  'than there time only such first may new used most over where after between each many ' +
  'system model engine request token cache batch memory router server client stream prefix ' +
  'latency queue worker thread block layer value result data signal network process cluster ' +
  'replica shard node graph vector matrix kernel decode prefill weight tensor budget policy ' +
  'simple quiet bright early later common direct stable rapid gentle narrow proper steady ' +
  'river forest garden window mountain harbor village winter summer morning evening market ' +
  'build carry shape follow measure balance gather choose return answer explain observe'
).split(' ');

/** Fewest and most tokens in a completion when the request sets no max_tokens. */
export const MIN_NATURAL_TOKENS = 16;
export const MAX_NATURAL_TOKENS = 128;

export type PlannedFinish = 'stop' | 'length';

/** What one choice of a request will emit: its pieces, their token ids, and why it ends. */
export interface OutputPlan {
  pieces: string[];
  tokenIds: number[];
  finishReason: PlannedFinish;
}

export interface PlanInput {
  /** The engine's `--seed`. */
  engineSeed: number;
  /** The request's `seed`, when it sets one. */
  requestSeed?: number | undefined;
  promptTokenIds: readonly number[];
  /** Index of the choice (n > 1 gives each choice its own text). */
  index: number;
  /** max_tokens / max_completion_tokens; absent means "until the model stops". */
  maxTokens?: number | undefined;
  /** Room left in the context: max_model_len − prompt tokens. */
  room: number;
}

/**
 * The completion for one choice. With `maxTokens` it emits exactly that many tokens and
 * finishes with `length` (as vLLM does when a model does not stop first); without, a
 * seeded length in 16..128 that ends with `stop`. Either is cut at `room` with `length`.
 */
export function planOutput(input: PlanInput): OutputPlan {
  const rand = mulberry32(seedOf(input));
  let target: number;
  let finishReason: PlannedFinish;
  if (input.maxTokens !== undefined) {
    target = input.maxTokens;
    finishReason = 'length';
  } else {
    target = MIN_NATURAL_TOKENS + Math.floor(rand() * (MAX_NATURAL_TOKENS - MIN_NATURAL_TOKENS + 1));
    finishReason = 'stop';
  }
  if (target >= input.room) {
    target = Math.max(0, input.room);
    finishReason = 'length';
  }
  const pieces = generatePieces(rand, target);
  return { pieces, tokenIds: pieces.map(pieceId), finishReason };
}

/** Sentences of 6–14 words with the odd comma; paragraphs every few sentences. */
function generatePieces(rand: () => number, n: number): string[] {
  const out: string[] = [];
  let sentenceLeft = 0;
  let sentences = 0;
  let startOfLine = true;
  while (out.length < n) {
    if (sentenceLeft === 0) {
      sentenceLeft = 6 + Math.floor(rand() * 9);
      const w = pick(rand);
      const word = w[0]!.toUpperCase() + w.slice(1);
      out.push(startOfLine ? word : ' ' + word);
      startOfLine = false;
      sentenceLeft--;
      continue;
    }
    out.push(' ' + pick(rand));
    sentenceLeft--;
    if (out.length >= n) break;
    if (sentenceLeft === 0) {
      out.push('.');
      sentences++;
      if (sentences % 4 === 0 && out.length < n) {
        out.push('\n\n');
        startOfLine = true;
      }
    } else if (sentenceLeft > 2 && rand() < 0.08) {
      out.push(',');
    }
  }
  out.length = n;
  return out;
}

function pick(rand: () => number): string {
  return WORDS[Math.floor(rand() * WORDS.length)]!;
}

/** One 32-bit seed from everything that must make two outputs equal or different. */
function seedOf(input: PlanInput): number {
  let h = 0x811c9dc5;
  const mix = (v: number): void => {
    // Fold a safe integer (engine seeds may exceed 32 bits) in two halves.
    h = Math.imul(h ^ (v >>> 0), 0x01000193);
    h = Math.imul(h ^ (Math.floor(v / 0x1_0000_0000) >>> 0), 0x01000193);
  };
  mix(input.engineSeed);
  mix(input.requestSeed === undefined ? 0 : 1);
  mix(input.requestSeed ?? 0);
  mix(input.index);
  mix(input.promptTokenIds.length);
  for (const id of input.promptTokenIds) h = Math.imul(h ^ id, 0x01000193);
  return h >>> 0;
}

/** A small, fast, well-distributed PRNG; good enough for filler text. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
