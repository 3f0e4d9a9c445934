/**
 * A small seeded mutator of JSON request bodies for the edge fuzz: start
 * from a valid body of a route, apply a few structural mutations (drop, retype, nest, poison a
 * string, strange numbers, truncate), and serialize. Deterministic for a seed, so a failing body
 * is reproduced by its route, seed and index alone.
 */

/** mulberry32: tiny, fast and good enough to pick mutations. */
export const prng = (seed: number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
};

export type Rand = () => number;

const pick = <T>(rand: Rand, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;

/** A stable number for a string, to derive one seed per route. */
export const hashSeed = (text: string, base: number): number => {
  let h = base >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16_777_619) >>> 0;
  return h;
};

/**
 * Numbers JSON.stringify cannot write as such: a placeholder string carries them through and is
 * swapped for the raw token after serialization.
 */
const RAW_NUMBERS = ['1e308', '-1e308', '9007199254740993', '-0', '1e-320', '123456789012345678901234567890'];

/**
 * Raw JSON text to splice in after serialization: strange numbers, `__proto__` keys, and bodies
 * nested thousands of levels deep (which this process must not build as objects: cloning or
 * serializing them would overflow its own stack).
 */
class Splices {
  private readonly raw: string[] = [];
  token(text: string): string {
    this.raw.push(text);
    return `__SPLICE_${this.raw.length - 1}__`;
  }
  apply(text: string): string {
    return text.replace(/"__SPLICE_(\d+)__"/g, (_, i: string) => this.raw[Number(i)] ?? 'null');
  }
}

const nestedText = (depth: number, leaf: string, asArray: boolean): string =>
  asArray
    ? `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}${leaf}${'}'.repeat(depth)}`;

/** A value of a kind the route does not expect, or an edge value of the kind it does. */
const strangeValue = (rand: Rand, splices: Splices): unknown => {
  const r = rand();
  if (r < 0.08) return null;
  if (r < 0.14) return [];
  if (r < 0.2) return {};
  if (r < 0.27) return [null];
  if (r < 0.33)
    return pick(rand, [-1, 0, 0.5, -0.5, 1.5, 2 ** 31, 2 ** 32, 2 ** 53, Number.MAX_SAFE_INTEGER]);
  if (r < 0.4) return splices.token(pick(rand, RAW_NUMBERS));
  if (r < 0.46) return pick(rand, [true, false]);
  if (r < 0.52) return pick(rand, ['', ' ', 'null', 'NaN', 'Infinity', '-1', '0x10', '[]', '{}']);
  if (r < 0.58) return pick(rand, ['\ud800', 'a\udfffb', '\u0000', '\u202e', '\uffff', 'é\u0301', '💥']);
  if (r < 0.63) return 'x'.repeat(pick(rand, [1_000, 70_000, 300_000]));
  if (r < 0.68)
    return splices.token(nestedText(pick(rand, [10, 100, 1_000, 5_000, 12_000]), '"x"', rand() < 0.5));
  if (r < 0.73) return [{ type: 'text' }];
  if (r < 0.78)
    return [
      {
        type: pick(rand, [
          'text',
          'image_url',
          'input_audio',
          'tool_use',
          'tool_result',
          'image',
          'thinking',
        ]),
        text: null,
      },
    ];
  if (r < 0.83)
    return { role: pick(rand, ['user', 'assistant', 'system', 'tool', 'developer', 'x']), content: null };
  if (r < 0.88) return Array.from({ length: pick(rand, [2, 50, 500]) }, () => null);
  if (r < 0.93)
    return splices.token(
      pick(rand, ['{"__proto__":{"polluted":true}}', '{"constructor":{"prototype":{"polluted":true}}}']),
    );
  return pick(rand, [
    '=1+1',
    '@SUM(1)',
    '../../etc/passwd',
    '<script>',
    'svc/auto',
    'openai/gpt-4o',
    'a,b,,c',
  ]);
};

/** Every path to a value inside `v` (objects and arrays), the root included. */
const paths = (v: unknown, at: (string | number)[] = [], out: (string | number)[][] = [], depth = 0) => {
  out.push(at);
  if (depth > 8) return out;
  if (Array.isArray(v)) for (const [i, x] of v.entries()) paths(x, [...at, i], out, depth + 1);
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out, depth + 1);
  return out;
};

const getAt = (v: unknown, path: (string | number)[]): unknown =>
  path.reduce<unknown>((node, k) => (node as Record<string | number, unknown> | null)?.[k], v);

const setAt = (root: unknown, path: (string | number)[], value: unknown): unknown => {
  if (path.length === 0) return value;
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, unknown>;
  parent[path.at(-1)!] = value;
  return root;
};

const deleteAt = (root: unknown, path: (string | number)[]): unknown => {
  if (path.length === 0) return root;
  const parent = getAt(root, path.slice(0, -1));
  const key = path.at(-1)!;
  if (Array.isArray(parent) && typeof key === 'number') parent.splice(key, 1);
  else if (parent && typeof parent === 'object') delete (parent as Record<string, unknown>)[key as string];
  return root;
};

const FIELD_NAMES = [
  'model',
  'messages',
  'content',
  'role',
  'stream',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'tools',
  'tool_choice',
  'tool_calls',
  'user',
  'metadata',
  'input',
  'system',
  'stream_options',
  'thinking',
  'response_format',
  'temperature',
  'stop',
  'encoding_format',
  'dimensions',
  'instructions',
  'x',
];

/** One mutation round on `body` (returns the new root). */
const mutateOnce = (body: unknown, rand: Rand, splices: Splices): unknown => {
  const path = pick(rand, paths(body));
  const r = rand();
  if (r < 0.3) return setAt(body, path, strangeValue(rand, splices));
  if (r < 0.45) return deleteAt(body, path);
  if (r < 0.6) {
    const target = getAt(body, path);
    if (target && typeof target === 'object' && !Array.isArray(target)) {
      (target as Record<string, unknown>)[pick(rand, FIELD_NAMES)] = strangeValue(rand, splices);
      return body;
    }
    return setAt(body, path, strangeValue(rand, splices));
  }
  if (r < 0.7) {
    const target = getAt(body, path);
    if (Array.isArray(target) && target.length > 0) {
      const first = JSON.stringify(target[0] ?? null);
      target.push(...Array.from({ length: pick(rand, [1, 5, 100]) }, () => JSON.parse(first) as unknown));
      return body;
    }
    return setAt(body, path, [target ?? null]);
  }
  if (r < 0.8) {
    // A scalar of one type becomes another.
    const target = getAt(body, path);
    const swapped =
      typeof target === 'string'
        ? pick(rand, [1, [target], { text: target }])
        : typeof target === 'number'
          ? String(target)
          : target === null
            ? 'null'
            : JSON.stringify(target ?? null);
    return setAt(body, path, swapped);
  }
  if (r < 0.88) {
    const leaf = JSON.stringify(getAt(body, path) ?? 'x') ?? '"x"';
    return setAt(body, path, splices.token(nestedText(pick(rand, [50, 3_000, 10_000]), leaf, rand() < 0.5)));
  }
  if (r < 0.94) return pick(rand, [null, [], 'text', 42, [body], true]);
  return setAt(body, path, strangeValue(rand, splices));
};

/** One mutated body of `base`: the text to send (possibly not JSON at all). */
export const mutate = (base: unknown, rand: Rand): string => {
  const splices = new Splices();
  let body: unknown = JSON.parse(JSON.stringify(base));
  const rounds = 1 + Math.floor(rand() * 3);
  for (let i = 0; i < rounds; i++) body = mutateOnce(body, rand, splices);
  let text = splices.apply(JSON.stringify(body) ?? 'null');
  const tail = rand();
  if (tail < 0.04) text = text.slice(0, Math.floor(rand() * text.length));
  else if (tail < 0.06) text = `${text},`;
  else if (tail < 0.07) text = text.replace(/"/, "'");
  return text;
};
