// A toy tokenizer and chat template for the simulated engine. They only need to be
// deterministic and shaped like the real thing: about one token per word, the same text
// always giving the same ids (so equal prompts share KV blocks), and a chat template that
// renders a conversation as one prompt with the system prompt first (so requests that
// share a system prompt share leading blocks, which is what prefix-aware routing exploits).

/** Llama-3 special tokens, with their real ids, so prompts look like Llama-3.1 prompts. */
const SPECIAL: ReadonlyMap<string, number> = new Map([
  ['<|begin_of_text|>', 128000],
  ['<|end_of_text|>', 128001],
  ['<|start_header_id|>', 128006],
  ['<|end_header_id|>', 128007],
  ['<|eom_id|>', 128008],
  ['<|eot_id|>', 128009],
  ['<|python_tag|>', 128010],
  ['<|image|>', 128256],
]);

/** Ordinary pieces hash into [FIRST_ID, FIRST_ID + VOCAB): below the special ids. */
const FIRST_ID = 256;
const VOCAB = 128000 - FIRST_ID;

/** Longest run of letters kept as one token; longer runs (identifiers, base64) are split. */
const MAX_WORD = 10;

// Pre-tokenizer in the style of GPT-2/Llama-3: special tokens, a word with its leading
// space, up to three digits, a run of punctuation, newlines, other whitespace.
// A punctuation run stops before `<|` so `text.<|eot_id|>` keeps its special token whole;
// the last alternative takes any single character left over, so no text is ever dropped.
const PIECE = /<\|[a-z_]+\|>| ?\p{L}+| ?\p{N}{1,3}| ?(?:(?!<\|)[^\s\p{L}\p{N}])+|\s*[\r\n]+|\s+(?!\S)|\s+|[\s\S]/gu;

/** Stable id of one piece: FNV-1a over its UTF-16 code units. */
export function pieceId(piece: string): number {
  const special = SPECIAL.get(piece);
  if (special !== undefined) return special;
  let h = 0x811c9dc5;
  for (let i = 0; i < piece.length; i++) {
    h ^= piece.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return FIRST_ID + ((h >>> 0) % VOCAB);
}

/** Splits text into token pieces; joining them gives the text back. */
export function pieces(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PIECE)) {
    const p = m[0];
    if (p.length > MAX_WORD + 1 && /^ ?\p{L}+$/u.test(p)) {
      for (let i = 0; i < p.length; i += MAX_WORD) out.push(p.slice(i, i + MAX_WORD));
    } else {
      out.push(p);
    }
  }
  return out;
}

export function tokenize(text: string): number[] {
  return pieces(text).map(pieceId);
}

/** One chat message as the OpenAI API accepts it (only what the template reads). */
export interface ChatMessage {
  role: string;
  content?: string | readonly ChatContentPart[] | null | undefined;
  name?: string | undefined;
  tool_calls?: unknown;
  tool_call_id?: string | undefined;
}

export interface ChatContentPart {
  type: string;
  text?: string;
}

export interface ChatTemplateOptions {
  /** End with an open assistant header, as vLLM does by default. */
  addGenerationPrompt?: boolean;
  /** The request's `tools`, rendered after the first header so they are part of the prefix. */
  tools?: unknown;
}

/**
 * Renders messages Llama-3.1 style:
 * `<|begin_of_text|><|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>…`
 * then an open assistant header.
 */
export function applyChatTemplate(messages: readonly ChatMessage[], opts: ChatTemplateOptions = {}): string {
  let out = '<|begin_of_text|>';
  if (opts.tools !== undefined && opts.tools !== null) {
    out += `<|start_header_id|>system<|end_header_id|>\n\nTools:\n${JSON.stringify(opts.tools)}<|eot_id|>`;
  }
  for (const m of messages) {
    out += `<|start_header_id|>${m.role}<|end_header_id|>\n\n${contentText(m)}<|eot_id|>`;
  }
  if (opts.addGenerationPrompt !== false) out += '<|start_header_id|>assistant<|end_header_id|>\n\n';
  return out;
}

function contentText(m: ChatMessage): string {
  let text = '';
  const c = m.content;
  if (typeof c === 'string') text = c;
  else if (Array.isArray(c)) {
    for (const part of c) text += part.type === 'text' ? (part.text ?? '') : '<|image|>';
  }
  if (m.tool_calls !== undefined && m.tool_calls !== null) text += `<|python_tag|>${JSON.stringify(m.tool_calls)}`;
  return text;
}
