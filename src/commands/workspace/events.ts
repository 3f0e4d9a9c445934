export type WorkspaceRole = 'manager' | 'member';

export type WorkspaceEvent =
  | { type: 'WorkspaceCreated'; data: { workspace_id: string; name: string } }
  | { type: 'MemberAdded'; data: { user_id: string; email: string; role: WorkspaceRole } }
  | { type: 'MemberRemoved'; data: { user_id: string } }
  | { type: 'DimensionDefined'; data: { definition_id: string; key: string; description: string } }
  | { type: 'DimensionArchived'; data: { definition_id: string; archived_at: string } };

export type WorkspaceCommand =
  | { type: 'CreateWorkspace'; workspaceId: string; name: string }
  | { type: 'AddMember'; userId: string; email: string; role: WorkspaceRole }
  | { type: 'RemoveMember'; userId: string }
  | { type: 'DefineDimension'; definitionId: string; key: string; description: string }
  | { type: 'ArchiveDimension'; definitionId: string; now: string };
