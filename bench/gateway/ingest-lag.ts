import type { LoadTarget } from './load.js';

/**
 * Served to queryable, for a `svc serve` that runs its own ingest and query roles: how long after a
 * response reaches the client its request row answers on the query API (SPEC 4.5
 * `GET /api/requests/:request_id`), read with the administrator bearer (SPEC 5) of the data dir.
 */
export interface QueryApi {
  httpUrl: string;
  orgId: string;
  adminToken: string;
}

const get = async (api: QueryApi, path: string): Promise<Response> =>
  fetch(`${api.httpUrl}${path}`, { headers: { authorization: `Bearer ${api.adminToken}` } });

/** Rows of the org whose request started at or after `from` (`total` of SPEC 4.5 /api/requests). */
export const queryableSince = async (api: QueryApi, from: Date): Promise<number> => {
  const res = await get(
    api,
    `/api/requests?org_id=${encodeURIComponent(api.orgId)}&from=${encodeURIComponent(from.toISOString())}&limit=1`,
  );
  if (res.status !== 200) throw new Error(`GET /api/requests answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { total: number }).total;
};

/**
 * Polls until at least `served` rows started at or after `from` are queryable; the seconds it
 * took, or null when `timeoutMs` passed first (with the count last seen).
 */
export const untilQueryable = async (
  api: QueryApi,
  from: Date,
  served: number,
  timeoutMs: number,
): Promise<{ seconds: number | null; queryable: number }> => {
  const started = performance.now();
  for (;;) {
    const queryable = await queryableSince(api, from);
    if (queryable >= served) return { seconds: (performance.now() - started) / 1_000, queryable };
    if (performance.now() - started > timeoutMs) return { seconds: null, queryable };
    await new Promise((r) => setTimeout(r, 250));
  }
};

export interface LagResult {
  /** Seconds from served to queryable, one per probe that became queryable. */
  lags: number[];
  /** Probe requests served (they count among the requests the target served). */
  served: number;
  /** Probes whose row was still not queryable when the prober gave up. */
  unresolved: number;
  /** Query API calls made by the prober (their CPU lands in the measured process). */
  polls: number;
}

const EVERY_MS = 250;
const POLL_MS = 100;
/** The first lookup of a probe comes this long before the last probe's lag would have it answer. */
const EARLY_MS = 100;
/**
 * One probe at a time: each lookup is a query on the measured process's own analytics engine (a
 * FINAL read through chdb costs several ms of CPU), so the probing is kept to a few lookups a second.
 */
const MAX_OUTSTANDING = 1;

/**
 * On each 250 ms tick with no probe outstanding, one more request of the load (same body, same key)
 * is sent beside it; once it is served, its x-svc-request-id is looked up until its row answers:
 * first a little before the previous probe's lag, then every 100 ms (the lag's resolution), given up
 * `giveUpMs` after `stop()`.
 */
export const startLagProbe = (api: QueryApi, target: LoadTarget, giveUpMs = 60_000) => {
  const lags: number[] = [];
  const outstanding = new Set<Promise<void>>();
  let served = 0;
  let unresolved = 0;
  let polls = 0;
  let stopping = false;
  let stoppedAt = Number.POSITIVE_INFINITY;
  const firstLookupMs = () => Math.max(POLL_MS, 1e3 * (lags.at(-1) ?? 0) - EARLY_MS);

  const probe = async (answered: () => void): Promise<void> => {
    const res = await fetch(target.url, { method: 'POST', headers: target.headers, body: target.body });
    await res.arrayBuffer();
    const servedAt = performance.now();
    if (res.status !== 200) throw new Error(`lag probe answered ${res.status}`);
    served++;
    answered();
    const id = res.headers.get('x-svc-request-id');
    if (!id) throw new Error('lag probe: no x-svc-request-id on the response');
    const path = `/api/requests/${encodeURIComponent(id)}?org_id=${encodeURIComponent(api.orgId)}`;
    await new Promise((r) => setTimeout(r, firstLookupMs()));
    for (;;) {
      polls++;
      const found = await get(api, path);
      await found.arrayBuffer();
      if (found.status === 200) {
        lags.push((performance.now() - servedAt) / 1_000);
        return;
      }
      if (found.status !== 404) throw new Error(`GET /api/requests/:id answered ${found.status}`);
      if (performance.now() - stoppedAt > giveUpMs) {
        unresolved++;
        return;
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };

  let failure: unknown = null;
  const inFlight = new Set<Promise<void>>();
  const timer = setInterval(() => {
    if (stopping || outstanding.size >= MAX_OUTSTANDING) return;
    let answered: () => void = () => {};
    const request = new Promise<void>((r) => {
      answered = r;
    });
    const p: Promise<void> = probe(answered)
      .catch((err: unknown) => {
        failure ??= err;
      })
      .finally(() => {
        answered();
        outstanding.delete(p);
      });
    outstanding.add(p);
    inFlight.add(request);
    void request.then(() => inFlight.delete(request));
  }, EVERY_MS);

  return {
    /** Stops sending probes; resolves once those sent are answered, with how many were served. */
    stop: async (): Promise<number> => {
      stopping = true;
      stoppedAt = performance.now();
      clearInterval(timer);
      while (inFlight.size > 0) await Promise.all([...inFlight]);
      return served;
    },
    /** Waits for every probe's row (or the give-up time) and returns the lags. */
    settle: async (): Promise<LagResult> => {
      while (outstanding.size > 0) await Promise.all([...outstanding]);
      if (failure) throw failure;
      return { lags, served, unresolved, polls };
    },
  };
};

export const quantile = (values: number[], q: number): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
};
