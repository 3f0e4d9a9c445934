import { describe, expect, it } from 'vitest';
import { chatRequest } from '../../test/fixtures/azure/azure.fixtures.js';
import { buildRequestRecord } from '../events/envelopes/record.js';
import { requestCompletedSchema } from '../events/envelopes/request-completed.js';
import type { Usage } from '../providers/contract.js';
import type { CompletedRequest } from './completed.js';
import { envelopeOf } from './envelope.js';

// SPEC 2.5 and 4.1 rule 10: usage counters an upstream sent unreadable (a string, a fraction, a
// negative, null) fail billing, and the request is still recorded: the envelope must stay valid,
// or ingest would dead-letter a served request instead of storing its row.

const completed = (usage: unknown): CompletedRequest => {
  const at = new Date('2026-11-01T00:00:00.000Z');
  return {
    requestId: 'req_1',
    key: {
      apiKeyId: 'key_1',
      projectId: 'prj_1',
      orgId: 'org_1',
      workspaceId: 'ws_1',
      name: 'k',
      prefix: 'sk-svc-ab',
      tracing: false,
    },
    request: chatRequest(),
    requestBytes: 64,
    status: 'success',
    httpStatus: 200,
    errorCode: null,
    errorType: null,
    provider: 'openai',
    modelServed: 'gpt-4o',
    providerModelId: 'gpt-4o',
    funding: 'byok',
    startedAt: at,
    finishedAt: at,
    ttfbMs: 1,
    attempts: [],
    usage: usage as Usage,
    usageEstimated: false,
    pricing: null,
    tracing: { full: false, source: 'none' },
    sessionId: null,
    toolSummary: {},
    bodies: null,
  };
};

describe('envelopeOf', () => {
  it('keeps readable counters as they are', () => {
    const { draft } = envelopeOf(
      completed({
        prompt_tokens: 10,
        completion_tokens: 5,
        total_tokens: 15,
        prompt_tokens_details: { cached_tokens: 2 },
      }),
    );
    expect(draft.usage).toMatchObject({
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      cache_read_tokens: 2,
    });
  });

  it('records unreadable counters as 0 so the envelope still validates', () => {
    for (const bad of ['100', 1.5, -3, null, 2 ** 40]) {
      const { draft } = envelopeOf(
        completed({
          prompt_tokens: bad,
          completion_tokens: bad,
          total_tokens: bad,
          prompt_tokens_details: { cached_tokens: bad, cache_write_tokens: bad },
        }),
      );
      const { envelope } = buildRequestRecord(draft);
      const parsed = requestCompletedSchema.safeParse(JSON.parse(JSON.stringify(envelope)));
      expect(parsed.success, `counter ${String(bad)}`).toBe(true);
      expect(draft.usage).toMatchObject({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
    }
  });
});
