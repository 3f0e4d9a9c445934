/**
 * Which span and event attributes are payload (SPEC 2.3 artifact kinds, 1.10): the OpenInference
 * and GenAI names of inputs, outputs, messages, tool arguments and results, retrieved documents,
 * media and raw provider bodies, and how flattened keys group into one artifact. Pure.
 */
import type { ArtifactKind } from './model.js';

export interface PayloadClass {
  kind: ArtifactKind;
  /** The attribute the artifact stands for; flattened keys under it share its artifact. */
  base: string;
}

export const DOT = 0x2e;
const cls = (kind: ArtifactKind, base: string): PayloadClass => ({ kind, base });

/** `key` is `stem` or a flattened key under it (`stem.0.message.content`). */
const under = (key: string, stem: string): boolean =>
  key.length === stem.length
    ? key === stem
    : key.length > stem.length && key.charCodeAt(stem.length) === DOT && key.startsWith(stem);

// Stems whose flattened keys group into one artifact, by the first character of the key, so a key
// is compared with a handful of stems at most and most keys with none.
const STEMS = new Map<string, PayloadClass[]>();
// `llm.prompts*`-style stems: any key starting with the stem; one not continuing with a dot is its own base.
const GLOBS = new Map<string, PayloadClass[]>();
const byFirstChar = (table: Map<string, PayloadClass[]>, c: PayloadClass): void => {
  const first = c.base[0]!;
  const list = table.get(first);
  if (list === undefined) table.set(first, [c]);
  else list.push(c);
};
const stem = (kind: ArtifactKind, base: string): void => byFirstChar(STEMS, cls(kind, base));
const glob = (kind: ArtifactKind, base: string): void => byFirstChar(GLOBS, cls(kind, base));

stem('input', 'input.value');
stem('input', 'llm.input_messages');
stem('input', 'llm.prompt_template.variables');
stem('input', 'gen_ai.input.messages');
stem('input', 'gen_ai.system_instructions');
stem('input', 'gen_ai.content.prompt');
glob('input', 'llm.prompts');
glob('input', 'gen_ai.prompt');
stem('output', 'output.value');
stem('output', 'gen_ai.output.messages');
stem('output', 'gen_ai.content.completion');
stem('output', 'gen_ai.choice');
glob('output', 'llm.output_messages');
glob('output', 'gen_ai.completion');
stem('tool_arguments', 'gen_ai.tool.call.arguments');
stem('tool_arguments', 'tool.arguments');
stem('tool_result', 'gen_ai.tool.call.result');
stem('tool_result', 'tool.result');
stem('tool_result', 'tool.output');
glob('retrieved_document', 'retrieval.documents');
glob('retrieved_document', 'reranker.input_documents');
glob('retrieved_document', 'reranker.output_documents');
stem('retrieved_document', 'document.content');
for (const raw of ['llm.raw_request', 'llm.raw_response', 'raw_request', 'raw_response'])
  stem('raw_provider_payload', raw);
stem('raw_provider_payload', 'http.request.body');
stem('raw_provider_payload', 'http.response.body');
// Other instrumentations' names (compared lowercased): OpenInference's bare message and template,
// the Vercel AI SDK, Traceloop/OpenLLMetry, MLflow, Langfuse, and bare prompt/completion/input/output.
stem('input', 'llm.prompt_template.template');
stem('input', 'message.content');
stem('input', 'prompt');
stem('input', 'input');
stem('input', 'traceloop.entity.input');
stem('input', 'mlflow.spaninputs');
stem('input', 'langfuse.observation.input');
glob('input', 'ai.prompt');
stem('output', 'completion');
stem('output', 'output');
stem('output', 'traceloop.entity.output');
stem('output', 'mlflow.spanoutputs');
stem('output', 'langfuse.observation.output');
stem('output', 'ai.response.text');
stem('output', 'ai.response.object');
stem('output', 'ai.response.reasoning');
stem('tool_arguments', 'ai.toolcall.args');
stem('tool_arguments', 'ai.response.toolcalls');
stem('tool_result', 'ai.toolcall.result');

const EMBEDDING_TEXTS = cls('input', 'embedding.embeddings');

/** `<...>.image.url`, `<...>.audio.data`, `image_url.url` and the like: the bytes or address of media. */
const MEDIA_CONTENT =
  /(?:^|\.)(?:image|audio|image_url|input_audio)\.(?:url|data|base64|bytes|content|transcript)$/;

/**
 * Which artifact a span or event attribute belongs to, or null when it is not payload. The
 * content-type patterns (tool-call arguments, image, audio) win over the message stems they sit
 * under, so an image or a call's arguments inside a message is its own artifact of its own kind.
 */
export const classifyKey = (key: string): PayloadClass | null => {
  // The names are compared in one spelling: `INPUT.VALUE`, ` input.value`, `input.value\0` or a
  // fullwidth `ｉ` name the same attribute to whoever reads it, so they are payload too.
  if (!PLAIN_KEY.test(key)) {
    const canonical = canonicalKey(key);
    if (canonical !== key) {
      const c = classifyPlain(canonical);
      // The artifact keeps the name as sent, so two spellings stay two attributes.
      return c === null ? null : cls(c.kind, c.base === canonical ? key : c.base);
    }
  }
  return classifyPlain(key);
};

const PLAIN_KEY = /^[a-z0-9._]*$/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
const INVISIBLE = /[\s\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202f\u2060-\u206f\ufeff]/g;
/** NFKC folds fullwidth and compatibility letters; then lowercase, without spaces and controls. */
export const canonicalKey = (key: string): string =>
  key.normalize('NFKC').toLowerCase().replace(INVISIBLE, '');

const classifyPlain = (key: string): PayloadClass | null => {
  // `input.mime_type` and the like describe a payload; they are not one.
  if (key.endsWith('.mime_type')) return null;
  if (key.endsWith('tool_call.function.arguments')) return cls('tool_arguments', key);
  // Media content only: an operational attribute such as container.image.name is no payload.
  if (key.includes('image') && (key.includes('message_content.image') || MEDIA_CONTENT.test(key)))
    return cls('image', key);
  if (key.includes('audio') && (key.includes('message_content.audio') || MEDIA_CONTENT.test(key)))
    return cls('audio', key);
  const first = key[0];
  if (first === undefined) return null;
  const stems = STEMS.get(first);
  if (stems !== undefined) for (const c of stems) if (under(key, c.base)) return c;
  const globs = GLOBS.get(first);
  if (globs !== undefined)
    for (const c of globs)
      if (key.startsWith(c.base))
        return key.length === c.base.length || key.charCodeAt(c.base.length) === DOT ? c : cls(c.kind, key);
  if (first === 'e' && key.startsWith('embedding.embeddings') && key.endsWith('.embedding.text'))
    return EMBEDDING_TEXTS;
  return null;
};

/** GenAI message events: every attribute but these is the message itself. */
export const messageEventKind = (name: string): ArtifactKind | undefined =>
  MESSAGE_EVENTS.get(name) ?? MESSAGE_EVENTS.get(canonicalKey(name));

export const MESSAGE_EVENTS = new Map<string, ArtifactKind>([
  ['gen_ai.user.message', 'input'],
  ['gen_ai.system.message', 'input'],
  ['gen_ai.tool.message', 'input'],
  ['gen_ai.content.prompt', 'input'],
  ['gen_ai.assistant.message', 'output'],
  ['gen_ai.choice', 'output'],
  ['gen_ai.content.completion', 'output'],
]);
export const MESSAGE_EVENT_METADATA = new Set([
  'gen_ai.system',
  'gen_ai.provider.name',
  'role',
  'index',
  'finish_reason',
]);
const INDEX_SEGMENT = /\.\d+(?:\.|$)/;

/** A message-event attribute's artifact: flattened `tool_calls.0.…` keys group under `tool_calls`. */
export const messageClass = (kind: ArtifactKind, key: string): PayloadClass => {
  const m = INDEX_SEGMENT.exec(key);
  return cls(kind, m !== null && m.index > 0 ? key.slice(0, m.index) : key);
};

/** Nodes of a structured value looked through for payload names before it counts as payload whole. */
const NESTED_BUDGET = 10_000;

/**
 * The payload class of a structured value under a key that is not payload by itself: a key-value
 * list or array holding a payload name at any depth (`input: {value: …}`, `metadata: {input.value:
 * …}`, `llm: {input_messages: […]}`) makes the whole attribute payload, since its keys nest the
 * same names the flattened conventions spell with dots. A value too large to look through whole is
 * taken as payload (raw_provider_payload) rather than kept unread.
 */
export const nestedPayloadClass = (key: string, value: unknown): PayloadClass | null => {
  let budget = NESTED_BUDGET;
  const walk = (path: string, v: unknown, depth: number): ArtifactKind | null => {
    if (typeof v !== 'object' || v === null) return null;
    // Past the depth attributes_json keeps (64), nothing survives to be read.
    if (depth > 64) return null;
    if (--budget < 0) return 'raw_provider_payload';
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const k = walk(`${path}.${i}`, v[i], depth + 1);
        if (k !== null) return k;
      }
      return null;
    }
    for (const sub of Object.keys(v)) {
      const inner = `${path}.${sub}`;
      const c = classifyKey(inner) ?? classifyKey(sub);
      if (c !== null) return c.kind;
      const k = walk(inner, (v as Record<string, unknown>)[sub], depth + 1);
      if (k !== null) return k;
    }
    return null;
  };
  const kind = walk(key, value, 0);
  return kind === null ? null : cls(kind, key);
};
