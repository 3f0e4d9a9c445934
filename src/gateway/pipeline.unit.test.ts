import { describe, expect, it } from 'vitest';
import { azureCredentials, azureEndpoint, chatRequest } from '../../test/fixtures/azure/azure.fixtures.js';
import type { AttemptFailure, ProviderAdapter } from '../providers/provider.js';
import { runAttempts } from './pipeline.js';

// The attempt pipeline (SPEC 2.4, 4.1): a retryable failure uses the shared retry
// budget, a fallback-eligible one moves on, a terminal one stops; the failed result names the
// endpoint of the last attempt so usage a failure consumed is priced on that endpoint's card.

const failure = (over: Partial<AttemptFailure>): AttemptFailure => ({
  kind: 'UpstreamStatus',
  status_code: 500,
  message: 'boom',
  retryable: false,
  fallback: false,
  ...over,
});

const budget = { retries: 1, deadlineMs: 10_000, attemptTimeoutMs: 5_000, backoffMs: 1 };
const limits = { maxResponseBytes: 1_000_000, maxErrorMessageBytes: 4_096 };

const run = (outcomes: AttemptFailure[], lanes: string[]) => {
  const calls: string[] = [];
  const adapter: ProviderAdapter = {
    id: 'azure',
    chat: async (_request, target) => {
      calls.push(target.endpoint.lane);
      return { ok: false, failure: outcomes.shift()! };
    },
  };
  const result = runAttempts(
    chatRequest(),
    lanes.map((lane) => azureEndpoint({ lane })),
    { adapters: new Map([['azure', adapter]]), credentials: () => azureCredentials(), limits },
    { requestId: 'req_1', signal: new AbortController().signal, budget },
  );
  return { calls, result };
};

describe('runAttempts', () => {
  it('retries within the shared budget, then falls back, and names the last endpoint tried', async () => {
    const { calls, result } = run(
      [
        failure({ retryable: true, fallback: true }),
        failure({ retryable: true, fallback: true }),
        failure({ consumed: { prompt_tokens: 3, completion_tokens: 0, total_tokens: 3 } }),
      ],
      ['azure-a', 'azure-b', 'azure-c'],
    );
    const r = await result;
    // One retry on the first candidate, then the second candidate, whose failure is terminal.
    expect(calls).toEqual(['azure-a', 'azure-a', 'azure-b']);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.attempts.map((a) => a.provider)).toEqual(['azure-a', 'azure-a', 'azure-b']);
    expect(r.lastEndpoint?.lane).toBe('azure-b');
    expect(r.failures.at(-1)?.consumed?.prompt_tokens).toBe(3);
  });

  it('a failure that skips retries falls forward without consuming the budget', async () => {
    const { calls, result } = run(
      [
        failure({ retryable: true, fallback: true, skipRetry: true }),
        failure({ retryable: true, fallback: true }),
        failure({}),
      ],
      ['azure-a', 'azure-b'],
    );
    await result;
    // The budget of one retry is still there for the second candidate.
    expect(calls).toEqual(['azure-a', 'azure-b', 'azure-b']);
  });

  it('an adapter that throws fails its attempt (Internal, recorded) and the next candidate is tried', async () => {
    const calls: string[] = [];
    const adapter: ProviderAdapter = {
      id: 'azure',
      chat: async (_request, target) => {
        calls.push(target.endpoint.lane);
        if (target.endpoint.lane === 'azure-a') throw new RangeError('Maximum call stack size exceeded');
        return { ok: false, failure: failure({}) };
      },
    };
    const r = await runAttempts(
      chatRequest(),
      ['azure-a', 'azure-b'].map((lane) => azureEndpoint({ lane })),
      { adapters: new Map([['azure', adapter]]), credentials: () => azureCredentials(), limits },
      { requestId: 'req_1', signal: new AbortController().signal, budget },
    );
    expect(calls).toEqual(['azure-a', 'azure-b']);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.attempts.map((a) => [a.provider, a.kind])).toEqual([
      ['azure-a', 'Internal'],
      ['azure-b', 'UpstreamStatus'],
    ]);
  });
});
