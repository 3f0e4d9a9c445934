import { describe, expect, it } from 'vitest';
import type { CanonicalChunk } from '../contract.js';
import { StreamFailure } from '../provider.js';
import type { RuntimeEvent } from './eventstream.js';
import { converseReply, finishReasonOf } from './reply.js';
import { ChunkMapper, converseChunks } from './stream.js';

const ev = (type: string, body: Record<string, unknown>): RuntimeEvent => ({ kind: 'event', type, body });

describe('rule 5: the buffered reply', () => {
  it('text blocks join into the message; toolUse becomes tool_calls; usage to prompt/completion', () => {
    const reply = converseReply(
      {
        output: {
          message: {
            role: 'assistant',
            content: [
              { text: 'Looking ' },
              { text: 'it up.' },
              { toolUse: { toolUseId: 'tu_1', name: 'get_weather', input: { city: 'Oslo' } } },
            ],
          },
        },
        stopReason: 'tool_use',
        usage: { inputTokens: 30, outputTokens: 12, totalTokens: 42 },
      },
      'anthropic.claude-3-haiku-20240307-v1:0',
    );
    expect(reply).toMatchObject({
      model: 'anthropic.claude-3-haiku-20240307-v1:0',
      message: {
        role: 'assistant',
        content: 'Looking it up.',
        tool_calls: [
          { id: 'tu_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      finishReason: 'tool_calls',
      usage: {
        prompt_tokens: 30,
        completion_tokens: 12,
        total_tokens: 42,
        completion_tokens_details: { reasoning_tokens: 0 },
      },
    });
  });

  it('only tool calls: content is null', () => {
    const reply = converseReply(
      {
        output: { message: { content: [{ toolUse: { toolUseId: 'a', name: 'f', input: {} } }] } },
        stopReason: 'tool_use',
      },
      'm',
    );
    expect(reply?.message.content).toBeNull();
  });

  it.each([
    ['max_tokens', 'length'],
    ['content_filtered', 'content_filter'],
    ['guardrail_intervened', 'content_filter'],
    ['tool_use', 'tool_calls'],
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['something_new', 'stop'],
    [undefined, 'stop'],
  ])('stopReason %s -> %s', (stop, finish) => {
    expect(finishReasonOf(stop)).toBe(finish);
  });

  it('a body that is not a Converse reply is refused', () => {
    expect(converseReply({ choices: [] }, 'm')).toBeNull();
    expect(converseReply(undefined, 'm')).toBeNull();
  });
});

describe('rule 6: stream events to chunks', () => {
  it('role, text, a tool block after text is still tool_calls[0], arguments fragments, finish, usage', () => {
    const mapper = new ChunkMapper();
    const out = [
      ev('messageStart', { role: 'assistant' }),
      ev('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hi' } }),
      ev('contentBlockStop', { contentBlockIndex: 0 }),
      ev('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tu_1', name: 'f' } } }),
      ev('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"a":' } } }),
      ev('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '1}' } } }),
      ev('contentBlockStart', { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tu_2', name: 'g' } } }),
      ev('contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: '{}' } } }),
      ev('messageStop', { stopReason: 'tool_use' }),
      ev('metadata', {
        usage: { inputTokens: 5, outputTokens: 7, totalTokens: 12 },
        metrics: { latencyMs: 3 },
      }),
    ]
      .map((e) => mapper.map(e))
      .filter((c): c is CanonicalChunk => c !== null);
    expect(out).toEqual([
      { delta: { role: 'assistant' } },
      { delta: { content: 'Hi' } },
      {
        delta: {
          tool_calls: [{ index: 0, id: 'tu_1', type: 'function', function: { name: 'f', arguments: '' } }],
        },
      },
      { delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] } },
      { delta: { tool_calls: [{ index: 0, function: { arguments: '1}' } }] } },
      {
        delta: {
          tool_calls: [{ index: 1, id: 'tu_2', type: 'function', function: { name: 'g', arguments: '' } }],
        },
      },
      { delta: { tool_calls: [{ index: 1, function: { arguments: '{}' } }] } },
      { delta: {}, finishReason: 'tool_calls' },
      {
        delta: {},
        usage: {
          prompt_tokens: 5,
          completion_tokens: 7,
          total_tokens: 12,
          completion_tokens_details: { reasoning_tokens: 0 },
        },
      },
    ]);
  });

  it('buffered and streamed replies with the same token counts report the same usage (rule 7)', () => {
    const usage = { inputTokens: 123, outputTokens: 45, totalTokens: 168 };
    const buffered = converseReply({ output: { message: { content: [{ text: 'x' }] } }, usage }, 'm')!.usage;
    const streamed = new ChunkMapper().map(ev('metadata', { usage }))!.usage;
    expect(streamed).toEqual(buffered);
  });

  it('an exception frame mid-stream throws an in-band StreamFailure with the name and the redacted message', async () => {
    async function* rest(): AsyncGenerator<RuntimeEvent> {
      yield ev('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'par' } });
      yield {
        kind: 'exception',
        name: 'modelStreamErrorException',
        message: 'Model arn:aws:bedrock:us-east-1:123456789012:foundation-model/x failed',
      };
    }
    const seen: CanonicalChunk[] = [];
    let released = false;
    const err = await (async () => {
      try {
        for await (const c of converseChunks(ev('messageStart', { role: 'assistant' }), rest(), () => {
          released = true;
        }))
          seen.push(c);
      } catch (e) {
        return e as StreamFailure;
      }
    })();
    expect(seen).toHaveLength(2);
    expect(err).toBeInstanceOf(StreamFailure);
    expect(err!.kind).toBe('in_band');
    expect(err!.code).toBe('ModelStreamErrorException');
    expect(err!.message).toBe('ModelStreamErrorException: Model <arn> failed');
    expect(released).toBe(true);
  });

  it('a stream that ends before messageStop fails as a cut read', async () => {
    async function* rest(): AsyncGenerator<RuntimeEvent> {
      yield ev('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'par' } });
    }
    const it = converseChunks(ev('messageStart', {}), rest(), () => {});
    await it.next();
    await it.next();
    await expect(it.next()).rejects.toMatchObject({ kind: 'read' });
  });

  it('tool input for a block never opened is undecodable', () => {
    expect(() =>
      new ChunkMapper().map(
        ev('contentBlockDelta', { contentBlockIndex: 3, delta: { toolUse: { input: '{' } } }),
      ),
    ).toThrow(StreamFailure);
  });
});
