/**
 * What the query API (SPEC 4.5) of the benched `svc serve` can see, read with the administrator
 * bearer of its data dir. The analytics engine (chdb) belongs to the data process, so the bench
 * cannot open it; it asks the service the way a user would.
 *
 * Spans are counted by session: every span of the bench carries session.id = its export's session
 * (EXPORTS_PER_SESSION exports in a row), and `GET /api/sessions/:id/traces` answers the number of
 * distinct traces in it (`total`) and, per trace, its distinct spans (`span_count`, one row per
 * span id, so a redelivered copy is not counted twice).
 */

export interface QueryApi {
  httpUrl: string;
  orgId: string;
  admin: string;
}

const getJson = async <T>(api: QueryApi, path: string): Promise<T> => {
  const res = await fetch(`${api.httpUrl}${path}`, { headers: { authorization: `Bearer ${api.admin}` } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
};

const org = (api: QueryApi) => `org_id=${encodeURIComponent(api.orgId)}`;

/** Distinct traces of the session with at least one queryable span. */
export const sessionTraceCount = async (api: QueryApi, sessionId: string): Promise<number> =>
  (
    await getJson<{ total: number }>(
      api,
      `/api/sessions/${encodeURIComponent(sessionId)}/traces?${org(api)}&limit=1`,
    )
  ).total;

/** Distinct queryable spans of the session: the sum of span_count over every page of its traces. */
export const sessionSpanCount = async (api: QueryApi, sessionId: string): Promise<number> => {
  let spans = 0;
  for (let offset = 0; ; offset += 500) {
    const page = await getJson<{ data: { span_count: number }[]; has_more: boolean }>(
      api,
      `/api/sessions/${encodeURIComponent(sessionId)}/traces?${org(api)}&limit=500&offset=${offset}`,
    );
    for (const t of page.data) spans += t.span_count;
    if (!page.has_more) return spans;
  }
};

/** Request rows of the org started at or after `from` (`total` of GET /api/requests). */
export const requestCount = async (api: QueryApi, from: Date): Promise<number> =>
  (
    await getJson<{ total: number }>(
      api,
      `/api/requests?${org(api)}&from=${encodeURIComponent(from.toISOString())}&limit=1`,
    )
  ).total;

/**
 * Watches sessions become queryable, in the order they are added: the oldest one not yet complete
 * is asked again every `everyMs` (`lateMs` once no more sessions are coming), a complete one never
 * again (trace rows are only ever added). During the load a session is added once every export of
 * it has been answered, so only the last few are left when the load ends, and the time the last
 * one was seen complete is within about one poll of when it became so.
 */
export const sessionWatcher = (api: QueryApi, options: { everyMs: number; lateMs: number }) => {
  const queue: [string, number][] = [];
  let closed = false;
  let polls = 0;
  let completeAt: number | null = null;
  let wake: (() => void) | null = null;
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = null;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
    });
  let deadline = Number.POSITIVE_INFINITY;
  let failure: unknown = null;
  const loop = (async () => {
    for (;;) {
      const head = queue[0];
      if (!head) {
        if (closed) return;
        await nap(options.everyMs);
        continue;
      }
      polls++;
      if ((await sessionTraceCount(api, head[0])) >= head[1]) {
        queue.shift();
        completeAt = performance.now();
        continue;
      }
      if (performance.now() > deadline) return;
      await nap(closed ? options.lateMs : options.everyMs);
    }
  })().catch((err: unknown) => {
    // Held for finish(): a query that fails mid-load must not end the process before clean-up.
    failure = err;
  });
  return {
    add: (session: string, traces: number) => {
      queue.push([session, traces]);
      wake?.();
    },
    /**
     * No more sessions: resolves once all are complete, with the performance.now() at which the
     * last was seen so, or null with the traces still missing by session once `until` passed.
     */
    finish: async (until: number) => {
      closed = true;
      deadline = until;
      wake?.();
      await loop;
      if (failure) throw failure;
      if (queue.length === 0) return { completeAt, short: new Map<string, number>(), polls };
      const short = new Map<string, number>();
      for (const [s, w] of queue) short.set(s, w - Math.min(w, await sessionTraceCount(api, s)));
      return { completeAt: null, short, polls };
    },
  };
};
