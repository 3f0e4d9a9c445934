import { AUDIO_CARD, TEXT_CARD } from './pricing.fixtures.js';
import { audioIn, audioOut, chat, fails, type GoldenCase } from './pricing.golden.js';

/**
 * Golden cases of the audio split (SPEC 4.1 rule 10), amounts multiplied out by hand from the
 * fixture prices: input audio 0.00004, output audio 0.00008, text 0.000003 in, 0.000015 out.
 */
export const AUDIO_GOLDEN_CASES: readonly GoldenCase[] = [
  {
    name: 'input audio share split off the input line',
    card: AUDIO_CARD,
    usage: chat(1000, 0, audioIn(600)),
    markers: ['reported', 'not_reported'],
    expected: {
      total: '0.0252',
      lines: [
        ['input_token/text', 400, '0.000003', '0.0012'],
        ['input_token/audio', 600, '0.00004', '0.024'],
      ],
    },
  },
  {
    name: 'billed input audio is the share minus cached tokens',
    card: AUDIO_CARD,
    usage: chat(1000, 0, { ...audioIn(600), cache_read_tokens: 300 }),
    expected: {
      total: '0.01329',
      lines: [
        ['input_token/text', 400, '0.000003', '0.0012'],
        ['input_token/audio', 300, '0.00004', '0.012'],
        ['cache_read_token/text', 300, '0.0000003', '0.00009'],
      ],
    },
  },
  {
    name: 'billed input audio clamps at zero when cache read plus write exceed the share',
    card: AUDIO_CARD,
    usage: chat(1000, 0, { ...audioIn(600), cache_read_tokens: 500, cache_write_tokens: { '5m': 200 } }),
    expected: {
      total: '0.0018',
      lines: [
        ['input_token/text', 300, '0.000003', '0.0009'],
        ['cache_read_token/text', 500, '0.0000003', '0.00015'],
        ['cache_write_token/text@5m', 200, '0.00000375', '0.00075'],
      ],
    },
  },
  {
    name: 'an audio share equal to prompt_tokens is all audio',
    card: AUDIO_CARD,
    usage: chat(1000, 0, audioIn(1000)),
    expected: { total: '0.04', lines: [['input_token/audio', 1000, '0.00004', '0.04']] },
  },
  {
    name: 'an input audio share above prompt_tokens fails',
    card: AUDIO_CARD,
    usage: chat(1000, 0, audioIn(1001)),
    markers: ['reported', 'not_reported'],
    expected: fails('audio_input_exceeds_prompt_tokens'),
  },
  {
    name: 'UInt32-max input audio is readable, and exceeds the prompt',
    card: AUDIO_CARD,
    usage: chat(1000, 0, audioIn(4_294_967_295)),
    markers: ['reported', 'not_reported'],
    expected: fails('audio_input_exceeds_prompt_tokens'),
  },
  {
    name: 'output audio share split off the output line',
    card: AUDIO_CARD,
    usage: chat(100, 1000, audioOut(700)),
    markers: ['not_reported', 'reported'],
    expected: {
      total: '0.0608',
      lines: [
        ['input_token/text', 100, '0.000003', '0.0003'],
        ['output_token/text', 300, '0.000015', '0.0045'],
        ['output_token/audio', 700, '0.00008', '0.056'],
      ],
    },
  },
  {
    name: 'output audio is not reduced by cached tokens (no output cache meter)',
    card: AUDIO_CARD,
    usage: chat(1000, 500, { ...audioOut(500), cache_read_tokens: 1000 }),
    expected: {
      total: '0.0403',
      lines: [
        ['cache_read_token/text', 1000, '0.0000003', '0.0003'],
        ['output_token/audio', 500, '0.00008', '0.04'],
      ],
    },
  },
  {
    name: 'an output audio share above completion_tokens fails',
    card: AUDIO_CARD,
    usage: chat(100, 100, audioOut(101)),
    expected: fails('audio_output_exceeds_completion_tokens'),
  },
  {
    name: 'audio input requested, counter null (not_reported): fails',
    card: AUDIO_CARD,
    usage: chat(1000, 10, audioIn(null)),
    markers: ['not_reported', 'not_reported'],
    expected: fails('audio_input_breakdown_missing'),
  },
  {
    name: 'audio input requested, fractional counter (unreadable): fails',
    card: AUDIO_CARD,
    usage: chat(1000, 10, audioIn(12.5)),
    markers: ['unreadable', 'not_reported'],
    expected: fails('audio_input_breakdown_missing'),
  },
  {
    name: 'audio input requested, counter beyond UInt32 (unreadable): fails',
    card: AUDIO_CARD,
    usage: chat(1000, 10, audioIn(4_294_967_296)),
    markers: ['unreadable', 'not_reported'],
    expected: fails('audio_input_breakdown_missing'),
  },
  {
    name: 'audio output requested, counter absent (not_reported): fails',
    card: AUDIO_CARD,
    usage: chat(10, 1000, audioOut(undefined)),
    markers: ['not_reported', 'not_reported'],
    expected: fails('audio_output_breakdown_missing'),
  },
  {
    name: 'audio output requested, counter a digit string (unreadable): fails',
    card: AUDIO_CARD,
    usage: chat(10, 1000, audioOut('300')),
    markers: ['not_reported', 'unreadable'],
    expected: fails('audio_output_breakdown_missing'),
  },
  {
    name: 'audio not requested and not reported: all text',
    card: AUDIO_CARD,
    usage: chat(1000, 100, audioIn(null, false)),
    markers: ['not_reported', 'not_reported'],
    expected: {
      total: '0.0045',
      lines: [
        ['input_token/text', 1000, '0.000003', '0.003'],
        ['output_token/text', 100, '0.000015', '0.0015'],
      ],
    },
  },
  {
    name: 'audio not requested, negative counter marked unreadable: all text',
    card: AUDIO_CARD,
    usage: chat(1000, 100, audioIn(-5, false)),
    markers: ['unreadable', 'not_reported'],
    expected: {
      total: '0.0045',
      lines: [
        ['input_token/text', 1000, '0.000003', '0.003'],
        ['output_token/text', 100, '0.000015', '0.0015'],
      ],
    },
  },
  {
    name: 'audio requested with a reported zero share: all text',
    card: AUDIO_CARD,
    usage: chat(1000, 0, audioIn(0)),
    markers: ['reported', 'not_reported'],
    expected: { total: '0.003', lines: [['input_token/text', 1000, '0.000003', '0.003']] },
  },
  {
    name: 'no audio rates: requested audio without breakdown neither splits nor fails',
    card: TEXT_CARD,
    usage: chat(1000, 1000, { audio_requested: { input: true, output: true } }),
    expected: {
      total: '0.00075',
      lines: [
        ['input_token/text', 1000, '0.00000015', '0.00015'],
        ['output_token/text', 1000, '0.0000006', '0.0006'],
      ],
    },
  },
  {
    name: 'no audio rates: a share above prompt_tokens neither splits nor fails',
    card: TEXT_CARD,
    usage: chat(1000, 1000, audioIn(5000)),
    markers: ['reported', 'not_reported'],
    expected: {
      total: '0.00075',
      lines: [
        ['input_token/text', 1000, '0.00000015', '0.00015'],
        ['output_token/text', 1000, '0.0000006', '0.0006'],
      ],
    },
  },
  {
    name: 'audio rates exist only on the standard tier: a flex request does not split',
    card: AUDIO_CARD,
    usage: chat(1000, 0, { ...audioIn(null), tier: 'flex' }),
    expected: { total: '0.0015', lines: [['input_token/text', 1000, '0.0000015', '0.0015']] },
  },
];
