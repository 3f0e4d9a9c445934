/**
 * What the write side asks the read side (ARCHITECTURE.md "Storage and the flow of data": commands
 * decide and append, projections keep the read models). Each question is a narrow port defined
 * here by the commands that ask it, answered by a reader beside the projection that writes the
 * rows (src/projections/*), and wired by the composition roots (src/roles, src/cli).
 */

/** Does a workspace exist: asked once by a command that names a workspace it does not write. */
export interface WorkspaceDirectory {
  exists(workspaceId: string): Promise<boolean>;
}
