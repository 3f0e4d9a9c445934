import { WALLET_CATEGORY } from '../../commands/wallet/events.js';
import type { Bus } from '../../events/bus.js';
import { subjects } from '../../events/subjects.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import { AUTH_CATEGORIES } from '../auth/projection.js';
import { CONTROL_PLANE_CATEGORIES } from '../control-plane/projection.js';
import { POLICY_CATEGORY } from '../policy/projection.js';
import type { Projection } from '../projection.js';
import { auditRecordOf, isAuditedEvent } from './audit-record.js';

/**
 * Relays every control-plane change to `svc.audit.events.<workspace_id>`. It runs
 * as a projection so its checkpoint moves only after the bus acknowledged the batch; a crash in
 * between republishes with the same message ids, which the bus drops as duplicates.
 */
export const auditRelay = (bus: Bus): Projection => ({
  name: 'audit_relay_control_plane',
  version: 1,
  categories: [...CONTROL_PLANE_CATEGORIES, ...AUTH_CATEGORIES, WALLET_CATEGORY, POLICY_CATEGORY],
  // Rebuilding re-publishes; the bus deduplicates within its window and the audit sealer by id.
  reset: async () => {},
  apply: async (_client, events) => {
    for (const e of events) {
      if (!isAuditedEvent(e.type)) continue;
      const record = auditRecordOf(e);
      await bus.publish(subjects.audit(record.tenant_id), canonicalJson(record), {
        messageId: `audit:${e.messageId}`,
      });
    }
  },
});
