// A seeded multi-turn chat workload with shared system prompts, the traffic that makes
// prefix-aware routing matter: K long system prompts (one per "application"), each shared
// by many users; every user holds a conversation of several turns, and each turn re-sends
// the whole history. So a request's prompt is [system prompt | earlier turns | new
// message]: the first part is shared across users of one application, the second across
// the turns of one user. The next turn starts only after the previous answer (plus a
// think time), as a person at a chat window does.

import { createRng, type Rng } from './rng.js';

export interface ChatWorkloadOptions {
  seed: number;
  /** K: distinct system prompts. */
  systemPrompts: number;
  /** Words per system prompt (the sim's tokenizer makes ~1.15 tokens of a word with its punctuation). */
  systemWords: readonly [number, number];
  /**
   * Zipf exponent of system-prompt popularity: 0 = every application equally used; real
   * traffic is skewed, which a router must balance against affinity.
   */
  popularity: number;
  /**
   * Share of conversations that go to application 0 whatever `popularity` says (the rest
   * follow it): one tenant hot enough to overload the engine a tenant hash sends it to.
   */
  hotShare?: number;
  conversations: number;
  turns: readonly [number, number];
  userWords: readonly [number, number];
  /** max_tokens of each answer. */
  answerTokens: readonly [number, number];
  /** Mean think time between an answer and the next turn (exponential), ms. */
  thinkMs: number;
  /** Conversations started per second (Poisson arrivals). */
  arrivalsPerSecond: number;
}

export interface Turn {
  user: string;
  maxTokens: number;
  /** Pause before this turn is sent, after the previous answer (0 for the first turn). */
  thinkMs: number;
}

export interface Conversation {
  id: number;
  /** Index into ChatWorkload.systemPrompts. */
  system: number;
  turns: Turn[];
}

export interface ChatWorkload {
  systemPrompts: string[];
  conversations: Conversation[];
  /** When each conversation starts, ms after the load begins (ascending). */
  arrivalsMs: number[];
}

const WORDS = (
  'account action answer archive balance billing branch budget buffer cache calendar campaign ' +
  'channel checkout client cluster comment config contract customer dataset deadline deploy ' +
  'device discount document domain draft estimate event export feature feedback filter forecast ' +
  'format gateway guide history import incident index invoice issue journal ledger license ' +
  'limit listing market memory message metric migration model module monitor network notice ' +
  'order owner package partner payment pipeline policy portal pricing printer priority process ' +
  'product profile project query queue quota receipt record refund region release replica ' +
  'report request review route sample schedule schema search segment server service session ' +
  'shipment signal source status storage summary supplier support survey ticket timeline token ' +
  'traffic update upload vendor version warehouse warning window worker always carefully clearly ' +
  'briefly politely never only first then also because before after while unless every each ' +
  'the a an to of for with and or but in on at by from into about your our their this that ' +
  'must should may can will check confirm explain list compare suggest avoid include mention'
).split(' ');

function sentence(rng: Rng, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) out.push(rng.pick(WORDS));
  const s = out.join(' ');
  return s[0]!.toUpperCase() + s.slice(1) + '.';
}

/** About `words` words of sentences of 6–16 words. */
function paragraph(rng: Rng, words: number): string {
  const parts: string[] = [];
  let left = words;
  while (left > 0) {
    const n = Math.min(left, rng.int(6, 16));
    parts.push(sentence(rng, n));
    left -= n;
  }
  return parts.join(' ');
}

/** Index drawn with probability ∝ 1/(i+1)^s. */
function zipf(rng: Rng, n: number, s: number): number {
  let total = 0;
  for (let i = 0; i < n; i++) total += 1 / (i + 1) ** s;
  let r = rng.next() * total;
  for (let i = 0; i < n; i++) {
    r -= 1 / (i + 1) ** s;
    if (r <= 0) return i;
  }
  return n - 1;
}

export function chatWorkload(o: ChatWorkloadOptions): ChatWorkload {
  const rng = createRng(o.seed);
  // Distinct from the first word on, so two applications share no KV block by accident.
  const systemPrompts = Array.from(
    { length: o.systemPrompts },
    (_, k) => `You are the assistant of application ${k + 1}. ${paragraph(rng, rng.int(o.systemWords[0], o.systemWords[1]))}`,
  );
  const conversations: Conversation[] = [];
  const arrivalsMs: number[] = [];
  let t = 0;
  for (let id = 0; id < o.conversations; id++) {
    const n = rng.int(o.turns[0], o.turns[1]);
    const turns: Turn[] = [];
    for (let i = 0; i < n; i++) {
      turns.push({
        user: `User ${id}: ${paragraph(rng, rng.int(o.userWords[0], o.userWords[1]))}`,
        maxTokens: rng.int(o.answerTokens[0], o.answerTokens[1]),
        thinkMs: i === 0 ? 0 : rng.exp(o.thinkMs),
      });
    }
    // Both draws always happen, so `hotShare` changes who talks, not what is said.
    const hot = rng.next() < (o.hotShare ?? 0);
    const system = zipf(rng, o.systemPrompts, o.popularity);
    conversations.push({ id, system: hot ? 0 : system, turns });
    arrivalsMs.push(t);
    t += rng.exp(1000 / o.arrivalsPerSecond);
  }
  return { systemPrompts, conversations, arrivalsMs };
}
