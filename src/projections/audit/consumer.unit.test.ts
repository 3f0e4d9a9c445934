import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../lib/canonical-json.js';
import { MAX_EVENT_BYTES, parseAuditMessage } from './consumer.js';

/** SPEC 6: what the audit role takes from `svc.audit.events.<tenant_id>` into a tenant's log. */

const subject = 'svc.audit.events.wsp_a';
const bytes = (text: string) => new TextEncoder().encode(text);
const event = (extra: Record<string, unknown> = {}) =>
  canonicalJson({ action: 'x.done', event_id: 'ev_1', tenant_id: 'wsp_a', ...extra });

describe('parseAuditMessage', () => {
  it('takes a canonical JSON event of the subject tenant, bytes as sent', () => {
    const data = bytes(event({ details: { n: 1, text: 'naïve ✓' } }));
    const parsed = parseAuditMessage(subject, data);
    expect(parsed).toEqual({ ok: true, event: { tenantId: 'wsp_a', eventId: 'ev_1', bytes: data } });
  });

  it.each([
    ['another tenant in the body', event({ tenant_id: 'wsp_b' })],
    [
      'a repeated key (a last-key-wins reader and a first-key-wins one disagree)',
      '{"action":"x","event_id":"ev_1","tenant_id":"wsp_b","tenant_id":"wsp_a"}',
    ],
    ['whitespace', event().replace(',', ', ')],
    ['unsorted keys', '{"tenant_id":"wsp_a","event_id":"ev_1"}'],
    ['a byte order mark', `\ufeff${event()}`],
    ['an event id with NUL', event({ event_id: 'ev\u0000x' })],
    ['an event id with an unpaired surrogate', event({ event_id: 'ev\ud800' })],
    ['an event id of 513 characters', event({ event_id: 'e'.repeat(513) })],
    ['no event id', canonicalJson({ tenant_id: 'wsp_a' })],
    ['nesting 100 levels deep', event({ deep: JSON.parse(`${'['.repeat(100)}${']'.repeat(100)}`) })],
    ['not JSON', '{not json'],
    ['an array', '[]'],
  ])('refuses %s', (_why, text) => {
    expect(parseAuditMessage(subject, bytes(text))).toMatchObject({ ok: false });
  });

  it('refuses bytes that are not UTF-8, events over the size cap, and subjects outside the tree', () => {
    expect(parseAuditMessage(subject, new Uint8Array([0x7b, 0xff, 0x7d]))).toMatchObject({ ok: false });
    const big = bytes(event({ pad: 'x'.repeat(MAX_EVENT_BYTES) }));
    expect(parseAuditMessage(subject, big)).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/bytes/),
    });
    expect(parseAuditMessage('svc.audit.events.wsp.a', bytes(event()))).toMatchObject({ ok: false });
    expect(parseAuditMessage('svc.requests.wsp_a', bytes(event()))).toMatchObject({ ok: false });
  });
});
