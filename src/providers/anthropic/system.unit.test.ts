import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../contract.js';
import { hoistSystem, responseFormatInstruction } from './system.js';

// SPEC 4.1 rule 6, system hoisting: the byte-identity cases spelled out one by one.

const hint = { type: 'ephemeral' };
const sys = (content: ChatMessage['content'], extra: Record<string, unknown> = {}): ChatMessage =>
  ({ role: 'system', content, ...extra }) as ChatMessage;
const dev = (content: ChatMessage['content']): ChatMessage => ({ role: 'developer', content });
const user: ChatMessage = { role: 'user', content: 'hi' };

describe('system and developer hoisting (golden)', () => {
  it('no hint: one joined string; a later message opens with a newline; parts join with nothing', () => {
    expect(
      hoistSystem(
        [
          sys('You are terse.'),
          user,
          dev([
            { type: 'text', text: 'Rule A.' },
            { type: 'text', text: ' Rule B.' },
          ]),
        ],
        null,
      ),
    ).toBe('You are terse.\nRule A. Rule B.');
  });

  it('a hint anywhere makes a block array that spells the same prompt as the string form', () => {
    const messages = [
      sys('One.'),
      dev([
        { type: 'text', text: 'Two.' },
        { type: 'text', text: 'Three.', cache_control: hint },
      ]),
    ];
    const blocks = hoistSystem(messages, null) as { text: string }[];
    expect(blocks).toEqual([
      { type: 'text', text: 'One.' },
      { type: 'text', text: '\nTwo.' },
      { type: 'text', text: 'Three.', cache_control: hint },
    ]);
    expect(blocks.map((b) => b.text).join('')).toBe('One.\nTwo.Three.');
  });

  it("a breakpoint on a later message's final block is byte-identical to the input", () => {
    const blocks = hoistSystem(
      [
        sys('First.'),
        sys([
          { type: 'text', text: 'Open.' },
          { type: 'text', text: 'Final block, cached.', cache_control: hint },
        ]),
      ],
      null,
    ) as { text: string; cache_control?: unknown }[];
    expect(blocks[2]).toEqual({ type: 'text', text: 'Final block, cached.', cache_control: hint });
  });

  it('any breakpoint in the first hoisted message is byte-identical to the input', () => {
    const blocks = hoistSystem(
      [
        sys([
          { type: 'text', text: 'Cached opening.', cache_control: hint },
          { type: 'text', text: ' More.' },
        ]),
        sys('Later.'),
      ],
      null,
    );
    expect(blocks).toEqual([
      { type: 'text', text: 'Cached opening.', cache_control: hint },
      { type: 'text', text: ' More.' },
      { type: 'text', text: '\nLater.' },
    ]);
  });

  it('a breakpoint on the block a later message opens with carries that message separator', () => {
    const blocks = hoistSystem(
      [
        sys('First.'),
        dev([
          { type: 'text', text: 'Opening, cached.', cache_control: hint },
          { type: 'text', text: 'Tail.' },
        ]),
      ],
      null,
    );
    expect(blocks).toEqual([
      { type: 'text', text: 'First.' },
      { type: 'text', text: '\nOpening, cached.', cache_control: hint },
      { type: 'text', text: 'Tail.' },
    ]);
  });

  it('a message-level hint lands on the last block that message contributes', () => {
    expect(hoistSystem([sys('Only block.', { cache_control: hint })], null)).toEqual([
      { type: 'text', text: 'Only block.', cache_control: hint },
    ]);
    expect(
      hoistSystem(
        [
          sys('A.'),
          sys(
            [
              { type: 'text', text: 'B1.' },
              { type: 'text', text: 'B2.' },
            ],
            { cache_control: hint },
          ),
        ],
        null,
      ),
    ).toEqual([
      { type: 'text', text: 'A.' },
      { type: 'text', text: '\nB1.' },
      { type: 'text', text: 'B2.', cache_control: hint },
    ]);
    // A later single-block message: its only block is the one it opens with, so it carries the newline.
    expect(hoistSystem([sys('A.'), sys('B.', { cache_control: hint })], null)).toEqual([
      { type: 'text', text: 'A.' },
      { type: 'text', text: '\nB.', cache_control: hint },
    ]);
  });

  it('the response_format instruction follows after a blank line in both forms', () => {
    expect(hoistSystem([sys('Be brief.')], 'Answer in JSON.')).toBe('Be brief.\n\nAnswer in JSON.');
    expect(hoistSystem([sys('Be brief.', { cache_control: hint })], 'Answer in JSON.')).toEqual([
      { type: 'text', text: 'Be brief.', cache_control: hint },
      { type: 'text', text: '\n\nAnswer in JSON.' },
    ]);
    expect(hoistSystem([user], 'Answer in JSON.')).toBe('Answer in JSON.');
    expect(hoistSystem([user], null)).toBeUndefined();
  });

  it('response_format: json_object and json_schema steer; text does not', () => {
    expect(responseFormatInstruction({ type: 'json_object' })).toContain('JSON object');
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
    const steered = responseFormatInstruction({
      type: 'json_schema',
      json_schema: { name: 'thing', schema },
    });
    expect(steered).toContain(JSON.stringify(schema));
    expect(steered).toContain('thing');
    expect(responseFormatInstruction({ type: 'text' })).toBeNull();
  });
});
