import { describe, expect, it } from 'vitest';
import type { CanonicalRequest } from '../providers/contract.js';
import type { JsonOutcome, ProviderAdapter, RelayedEvent } from '../providers/provider.js';
import { fileSearchCallItem, fileSearchTool, rewrittenBody, withFileSearchCall } from './file-search.js';
import type { FileSearchHit } from './file-search-port.js';

// SPEC 4.1 hosted file_search: the tool read from a responses body, the body rewritten for the
// reference provider, and the reply (buffered or streamed) given its file_search_call item first.

const request = (raw: Record<string, unknown>): CanonicalRequest => ({
  operation: 'responses',
  route: '/v1/responses',
  model: 'gpt-4o',
  messages: [],
  stream: false,
  includeUsage: false,
  raw,
});

const hits: FileSearchHit[] = [
  { file_id: 'file-a', filename: 'a.md', score: 0.91, attributes: { team: 'x' }, text: 'Alpha text' },
  { file_id: 'file-b', filename: 'b.txt', score: 0.5, attributes: null, text: 'Beta text' },
];

describe('fileSearchTool', () => {
  it('reads the tool and the last user message as the query', () => {
    const q = fileSearchTool(
      request({
        input: [
          { role: 'user', content: 'first' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: [{ type: 'input_text', text: 'what is alpha?' }] },
        ],
        tools: [{ type: 'file_search', vector_store_ids: ['vs_1', 'vs_1', 'vs_2'], max_num_results: 3 }],
      }),
    );
    expect(q).toEqual({
      vectorStoreIds: ['vs_1', 'vs_2'],
      query: 'what is alpha?',
      maxNumResults: 3,
      filters: null,
      rankingOptions: null,
    });
    expect(fileSearchTool(request({ input: 'x', tools: [{ type: 'function', name: 'f' }] }))).toBeNull();
  });

  it('refuses a malformed tool or a request with nothing to search for, naming the field', () => {
    const bad = (raw: Record<string, unknown>) => {
      try {
        fileSearchTool(request(raw));
        return null;
      } catch (e) {
        return e as { status: number; param: string };
      }
    };
    expect(bad({ input: 'x', tools: [{ type: 'file_search', vector_store_ids: [] }] })).toMatchObject({
      status: 400,
      param: 'tools',
    });
    expect(
      bad({ input: 'x', tools: [{ type: 'file_search', vector_store_ids: ['v'], max_num_results: 51 }] }),
    ).toMatchObject({
      param: 'tools',
    });
    expect(
      bad({
        input: [{ role: 'assistant', content: 'x' }],
        tools: [{ type: 'file_search', vector_store_ids: ['v'] }],
      }),
    ).toMatchObject({ param: 'input' });
  });
});

describe('rewrittenBody', () => {
  it('takes the tool out, drops the results include, and puts the results before the last user message', () => {
    const body = rewrittenBody(
      {
        model: 'gpt-4o',
        input: [
          { role: 'user', content: 'hi' },
          { role: 'user', content: 'what is alpha?' },
        ],
        tools: [
          { type: 'file_search', vector_store_ids: ['vs_1'] },
          { type: 'function', name: 'f' },
        ],
        include: ['file_search_call.results', 'reasoning.encrypted_content'],
      },
      'what is alpha?',
      hits,
    );
    expect(body.tools).toEqual([{ type: 'function', name: 'f' }]);
    expect(body.include).toEqual(['reasoning.encrypted_content']);
    const input = body.input as { role: string; content: string }[];
    expect(input.map((m) => m.role)).toEqual(['user', 'developer', 'user']);
    expect(input[1]!.content).toContain('[1] a.md (file-a, score 0.9100)\nAlpha text');
    expect(input[1]!.content).toContain('[2] b.txt');
  });

  it('a string input becomes a developer message and the user message; no tool left means no tool_choice', () => {
    const body = rewrittenBody(
      {
        input: 'q',
        tools: [{ type: 'file_search', vector_store_ids: ['v'] }],
        tool_choice: 'required',
        include: ['file_search_call.results'],
      },
      'q',
      [],
    );
    expect(body).not.toHaveProperty('tools');
    expect(body).not.toHaveProperty('tool_choice');
    expect(body).not.toHaveProperty('include');
    expect(body.input).toEqual([
      { role: 'developer', content: 'A file search for "q" found nothing in the vector stores.' },
      { role: 'user', content: 'q' },
    ]);
  });
});

describe('withFileSearchCall', () => {
  const adapter = {} as ProviderAdapter;
  const target = {} as Parameters<ReturnType<typeof withFileSearchCall>>[1];
  const item = fileSearchCallItem('q', hits, true);

  it('a buffered reply gets the item first in output', async () => {
    const call = withFileSearchCall(
      async (): Promise<JsonOutcome> => ({
        ok: true,
        reply: { body: { output: [{ type: 'message' }] }, usage: null },
      }),
      item,
    );
    const outcome = await call(adapter, target);
    expect(outcome.ok && 'reply' in outcome && outcome.reply.body.output).toEqual([
      item,
      { type: 'message' },
    ]);
    expect(item).toMatchObject({ type: 'file_search_call', status: 'completed', queries: ['q'] });
    expect((item.results as unknown[]).length).toBe(2);
    expect(fileSearchCallItem('q', hits, false).results).toBeNull();
  });

  it('a stream gets the item events after response.created; later events are renumbered', async () => {
    const upstream: RelayedEvent[] = [
      { type: 'response.created', sequence_number: 0, response: { output: [] } },
      { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { type: 'message' } },
      { type: 'response.completed', sequence_number: 2, response: { output: [{ type: 'message' }] } },
    ].map((d) => ({ event: d.type, data: JSON.stringify(d) }));
    const call = withFileSearchCall(
      async (): Promise<JsonOutcome> => ({
        ok: true,
        stream: (async function* () {
          yield* upstream;
        })(),
      }),
      item,
    );
    const outcome = await call(adapter, target);
    const events: Record<string, unknown>[] = [];
    if (outcome.ok && 'stream' in outcome)
      for await (const e of outcome.stream) events.push(JSON.parse(e.data));
    expect(events.map((e) => [e.type, e.sequence_number, e.output_index])).toEqual([
      ['response.created', 0, undefined],
      ['response.output_item.added', 1, 0],
      ['response.file_search_call.in_progress', 2, 0],
      ['response.file_search_call.searching', 3, 0],
      ['response.file_search_call.completed', 4, 0],
      ['response.output_item.done', 5, 0],
      ['response.output_item.added', 6, 1],
      ['response.completed', 7, undefined],
    ]);
    expect((events.at(-1)!.response as { output: unknown[] }).output).toEqual([item, { type: 'message' }]);
    expect((events[1]!.item as { status: string }).status).toBe('in_progress');
  });
});
