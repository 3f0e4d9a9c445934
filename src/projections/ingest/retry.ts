/** In-flush retries: a short budget inside one delivery; redelivery is the long one. */
export interface RetryPolicy {
  /** Tries in all, first included. */
  attempts: number;
  initialMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, initialMs: 100, maxMs: 1_000 };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `work` until it resolves or the attempts are used up; rejects with the last error. An error
 * `retryable` says no to (the same call cannot succeed unchanged) rejects at once.
 */
export const withRetries = async <T>(
  policy: RetryPolicy,
  work: () => Promise<T>,
  onFailure: (err: unknown, willRetry: boolean) => void = () => {},
  retryable: (err: unknown) => boolean = () => true,
): Promise<T> => {
  let delay = policy.initialMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      const willRetry = attempt < policy.attempts && retryable(err);
      onFailure(err, willRetry);
      if (!willRetry) throw err;
      // Jitter keeps several consumers that failed together from retrying in lockstep.
      await sleep(delay * (0.5 + Math.random() / 2));
      delay = Math.min(policy.maxMs, delay * 2);
    }
  }
};

/** Runs `fn` over `items` with at most `limit` at a time; settles every item, never rejects. */
export const settleAll = async <T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<PromiseSettledResult<R>[]> => {
  const results: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        results[i] = { status: 'fulfilled', value: await fn(items[i]!) };
      } catch (reason) {
        results[i] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
};
