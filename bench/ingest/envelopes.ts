import { randomBytes } from 'node:crypto';
import type { OutgoingMessage } from '../../src/events/bus.js';
import { buildRequestRecord } from '../../src/events/envelopes/record.js';
import { sampleDraft } from '../../test/fixtures/envelopes/envelopes.fixtures.js';

/** How the bench's requests were paid for: wallet ones append a ChargeSettled, BYOK ones only look. */
export type Funding = 'wallet' | 'byok';

export interface EnvelopeShape {
  /** Inline request and response bodies of exactly this many bytes each; 0 for none. */
  body: number;
  funding: Funding;
  /** Distinct request ids across runs and processes. */
  prefix: string;
}

/** Text bodies of exactly `size` bytes, different per request so nothing can be shared. */
const bodyOf = (i: number, side: string, size: number) => {
  const text = `{"${side}":${i},"data":"${randomBytes(size).toString('base64')}`;
  return `${text.slice(0, size - 2)}"}`;
};

/**
 * The messages of request `i` (chunks, if any, then its envelope), as the gateway publishes them:
 * sixteen organizations and workspaces, finished at `finishedAt` (the paced mode stamps the publish
 * time there, so the consumer can tell how long a request took to become queryable).
 */
export const requestMessages = (shape: EnvelopeShape, i: number, finishedAt: Date): OutgoingMessage[] => {
  const draft = sampleDraft({
    request_id: `req_${shape.prefix}_${i}`,
    org_id: `org_${i % 16}`,
    workspace_id: `wsp_${i % 16}`,
    funding: shape.funding,
    finished_at: finishedAt.toISOString(),
    trace:
      shape.body > 0 ? { full_tracing: true, source: 'header' } : { full_tracing: false, source: 'none' },
  });
  const bodies =
    shape.body > 0 ? { request: bodyOf(i, 'q', shape.body), response: bodyOf(i, 'a', shape.body) } : {};
  return buildRequestRecord(draft, bodies).record.messages;
};
