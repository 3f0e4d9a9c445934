import { assertNever } from '../../lib/assert.js';
import { ServiceError } from '../../lib/errors.js';
import type { Decider } from '../decider.js';

import type { TraceIngestKeyCommand, TraceIngestKeyEvent } from './events.js';

export interface TraceIngestKey {
  exists: boolean;
  revoked: boolean;
  tracing: boolean;
}

export const traceIngestKeyStream = (id: string) => `tracekey-${id}`;

export const traceIngestKeyDecider: Decider<TraceIngestKeyCommand, TraceIngestKeyEvent, TraceIngestKey> = {
  initialState: () => ({ exists: false, revoked: false, tracing: false }),
  decide: (cmd, s) => {
    if (cmd.type === 'CreateTraceIngestKey') {
      if (s.exists) throw new ServiceError('conflict', 'trace ingest key already exists');
      return [
        {
          type: 'TraceIngestKeyCreated',
          data: {
            trace_ingest_key_id: cmd.id,
            project_id: cmd.projectId,
            org_id: cmd.orgId,
            workspace_id: cmd.workspaceId,
            name: cmd.name,
            prefix: cmd.prefix,
            secret_hash: cmd.secretHash,
          },
        },
      ];
    }
    if (!s.exists || s.revoked) throw new ServiceError('not_found', 'trace ingest key not found');
    switch (cmd.type) {
      case 'RotateTraceIngestKey':
        return [
          {
            type: 'TraceIngestKeyRotated',
            data: { prefix: cmd.prefix, secret_hash: cmd.secretHash, rotated_at: cmd.now },
          },
        ];
      case 'RevokeTraceIngestKey':
        return [{ type: 'TraceIngestKeyRevoked', data: { revoked_at: cmd.now } }];
      case 'SetTraceIngestKeyTracing':
        return cmd.enabled === s.tracing
          ? []
          : [{ type: 'TraceIngestKeyTracingSet', data: { enabled: cmd.enabled } }];
      default:
        return assertNever(cmd);
    }
  },
  evolve: (s, e) => {
    switch (e.type) {
      case 'TraceIngestKeyCreated':
        return { ...s, exists: true };
      case 'TraceIngestKeyRotated':
        return s;
      case 'TraceIngestKeyRevoked':
        return { ...s, revoked: true };
      case 'TraceIngestKeyTracingSet':
        return { ...s, tracing: e.data.enabled };
      default:
        return assertNever(e);
    }
  },
};
