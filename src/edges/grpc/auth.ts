import type * as grpc from '@grpc/grpc-js';
import { z } from 'zod';
import type { ListedSession, Sessions } from '../../commands/auth/sessions.js';
import type { ApiKeyCache } from '../../gateway/auth/api-key-cache.js';
import { ServiceError } from '../../lib/errors.js';
import { unstorableText } from '../../lib/storable.js';
import type { AuthServiceHandlers } from './generated/svc/controlplane/v1/AuthService.js';
import type { ListUserSessionsRequest__Output } from './generated/svc/controlplane/v1/ListUserSessionsRequest.js';
import type { ListUserSessionsResponse__Output } from './generated/svc/controlplane/v1/ListUserSessionsResponse.js';
import type { RevokeSessionRequest__Output } from './generated/svc/controlplane/v1/RevokeSessionRequest.js';
import type { Session__Output } from './generated/svc/controlplane/v1/Session.js';
import type { VerifyApiKeyRequest__Output } from './generated/svc/controlplane/v1/VerifyApiKeyRequest.js';
import type { VerifyApiKeyResponse__Output } from './generated/svc/controlplane/v1/VerifyApiKeyResponse.js';
import type { VerifySessionRequest__Output } from './generated/svc/controlplane/v1/VerifySessionRequest.js';
import type { VerifySessionResponse__Output } from './generated/svc/controlplane/v1/VerifySessionResponse.js';
import { loadService } from './server.js';
import { unary } from './unary.js';

const actor = { id: 'grpc:auth' };

/** An id PostgreSQL can take as a parameter; whether it names anything is the read model's answer. */
const id = z
  .string()
  .min(1, 'is required')
  .max(256)
  .refine((s) => unstorableText(s) === null, 'is not storable text');

// Bearer secrets are only hashed, never stored: any string is a question with an answer. Each
// schema decodes its generated request type, so a field the proto renames fails to compile here.
const verifyApiKey = z.object({ api_key: z.string() }) satisfies z.ZodType<VerifyApiKeyRequest__Output>;
const verifySession = z.object({
  access_token: z.string(),
}) satisfies z.ZodType<VerifySessionRequest__Output>;
const revokeSession = z.object({ session_id: id }) satisfies z.ZodType<RevokeSessionRequest__Output>;
const listUserSessions = z.object({
  user_id: id,
  include_revoked: z.boolean(),
}) satisfies z.ZodType<ListUserSessionsRequest__Output>;

/** Decodes a request (proto-loader fills absent fields with defaults); the first issue is INVALID_ARGUMENT. */
const parse = <T extends z.ZodType>(schema: T, request: unknown): z.infer<T> => {
  const parsed = schema.safeParse(request);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.');
  throw new ServiceError('bad_request', `${field}: ${issue.message}`, { param: field });
};

const time = (d: Date | null) => (d ? d.toISOString() : '');

const session = (s: ListedSession): Session__Output => ({
  session_id: s.session_id,
  user_id: s.user_id,
  issued_at: time(s.issued_at),
  expires_at: time(s.expires_at),
  revoked: s.revoked_at !== null,
  revoked_at: time(s.revoked_at),
  expired: s.expired,
});

const INVALID_KEY: VerifyApiKeyResponse__Output = {
  valid: false,
  api_key_id: '',
  project_id: '',
  org_id: '',
  workspace_id: '',
};
const INVALID_SESSION: VerifySessionResponse__Output = {
  valid: false,
  user_id: '',
  session_id: '',
  expires_at: '',
  memberships: [],
};

/**
 * AuthService (SPEC 4.8: VerifyApiKey and session operations), served by the auth role; the
 * service token is the admin token, as for every other internal service.
 */
export const addAuthService = (
  server: grpc.Server,
  deps: { apiKeys: ApiKeyCache; sessions: Sessions },
  serviceToken: string,
): void => {
  server.addService(
    loadService('svc/controlplane/v1/control_plane.proto', 'svc.controlplane.v1.AuthService'),
    {
      VerifyApiKey: unary(serviceToken, async (request: unknown): Promise<VerifyApiKeyResponse__Output> => {
        const identity = deps.apiKeys.verify(parse(verifyApiKey, request).api_key);
        if (!identity) return INVALID_KEY;
        return {
          valid: true,
          api_key_id: identity.apiKeyId,
          project_id: identity.projectId,
          org_id: identity.orgId,
          workspace_id: identity.workspaceId,
        };
      }),
      VerifySession: unary(serviceToken, async (request: unknown): Promise<VerifySessionResponse__Output> => {
        const verified = await deps.sessions.verify(parse(verifySession, request).access_token);
        if (!verified) return INVALID_SESSION;
        return {
          valid: true,
          user_id: verified.user_id,
          session_id: verified.session_id,
          expires_at: time(verified.expires_at),
          memberships: [...verified.memberships].map(([workspace_id, role]) => ({ workspace_id, role })),
        };
      }),
      RevokeSession: unary(serviceToken, async (request: unknown) =>
        session(await deps.sessions.revoke(actor, parse(revokeSession, request).session_id)),
      ),
      ListUserSessions: unary(
        serviceToken,
        async (request: unknown): Promise<ListUserSessionsResponse__Output> => {
          const { user_id, include_revoked } = parse(listUserSessions, request);
          const sessions = await deps.sessions.list(user_id, { includeRevoked: include_revoked });
          return { sessions: sessions.map(session) };
        },
      ),
    } satisfies AuthServiceHandlers,
  );
};
