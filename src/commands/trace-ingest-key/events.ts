export type TraceIngestKeyEvent =
  | {
      type: 'TraceIngestKeyCreated';
      data: {
        trace_ingest_key_id: string;
        project_id: string;
        org_id: string;
        workspace_id: string;
        name: string;
        prefix: string;
        secret_hash: string;
      };
    }
  | { type: 'TraceIngestKeyRotated'; data: { prefix: string; secret_hash: string; rotated_at: string } }
  | { type: 'TraceIngestKeyRevoked'; data: { revoked_at: string } }
  /** Full payload capture for the spans sent with this key (SPEC 1.10, 2.3). */
  | { type: 'TraceIngestKeyTracingSet'; data: { enabled: boolean } };

export type TraceIngestKeyCommand =
  | {
      type: 'CreateTraceIngestKey';
      id: string;
      projectId: string;
      orgId: string;
      workspaceId: string;
      name: string;
      prefix: string;
      secretHash: string;
    }
  | { type: 'RotateTraceIngestKey'; prefix: string; secretHash: string; now: string }
  | { type: 'RevokeTraceIngestKey'; now: string }
  | { type: 'SetTraceIngestKeyTracing'; enabled: boolean };
