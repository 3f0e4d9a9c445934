import { describe, expect, it } from 'vitest';
import { renderPrimaryChunk, renderPrimaryReply } from './primary.js';

const who = { id: 'chatcmpl-x', created: 1, model: 'm' };
const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };

describe('primary rendering of synthesized chunks (non-reference upstreams)', () => {
  it('a delta chunk carries one choice with the stable identity', () => {
    expect(renderPrimaryChunk({ delta: { content: 'hi' } }, who, false)).toEqual({
      id: 'chatcmpl-x',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { content: 'hi' }, logprobs: null, finish_reason: null }],
    });
  });

  it('the terminal usage chunk has no choices and is sent only when asked', () => {
    expect(renderPrimaryChunk({ delta: {}, usage }, who, true)).toEqual({
      id: 'chatcmpl-x',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [],
      usage,
    });
    expect(renderPrimaryChunk({ delta: {}, usage }, who, false)).toBeNull();
  });

  it('a relayed reference chunk keeps its fields and takes our identity; an unasked usage is dropped', () => {
    const raw = {
      id: 'up',
      object: 'chat.completion.chunk',
      created: 9,
      model: 'up-model',
      system_fingerprint: 'fp',
      choices: [{ index: 0, delta: { content: 'x' } }],
      usage: null,
    };
    expect(renderPrimaryChunk({ delta: { content: 'x' }, raw }, who, false)).toEqual({
      ...raw,
      id: 'chatcmpl-x',
      created: 1,
      model: 'm',
      usage: undefined,
    });
    expect(renderPrimaryChunk({ delta: {}, raw: { ...raw, choices: [], usage } }, who, false)).toBeNull();
  });

  it('a synthesized buffered reply has one choice and the usage', () => {
    expect(
      renderPrimaryReply(
        {
          id: 'u',
          created: 5,
          model: 'x',
          message: { role: 'assistant', content: 'ok' },
          finishReason: 'stop',
          usage,
        },
        who,
      ),
    ).toMatchObject({
      id: 'chatcmpl-x',
      object: 'chat.completion',
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
      usage,
    });
  });
});
