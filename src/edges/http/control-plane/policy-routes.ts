import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ControlPlaneCommands } from '../../../commands/control-plane/commands.js';
import { requireOwner } from '../../../commands/ports.js';
import { ServiceError } from '../../../lib/errors.js';
import {
  POLICY_LAYERS,
  POLICY_SCHEMA_VERSION,
  type PolicyLayer,
  type PolicyScope,
  policyDocumentSchema,
} from '../../../policy/document.js';
import type { ControlPlaneReads } from '../../../projections/control-plane/reads.js';
import { parseBody } from '../body.js';
import { routeDoc } from '../openapi.js';
import { actorOf, type Principal, requireAdmin, requireWorkspace, visibleWorkspaces } from './auth.js';

/** What every answer repeats, so a console or a script knows how policies combine and apply. */
const POLICY_GUIDANCE = `A policy (schema_version ${POLICY_SCHEMA_VERSION}) set on an organization, project or API key limits what its requests may do: providers, models and routes (allow and deny patterns, * and ?), a max_tokens ceiling, payload capture and per-key rate limits. Two layers apply, each resolved from org to project to API key: the operator's (?layer=operator, set by the platform administrator only) and the workspace's (the default, set by managers); a request must pass both. Within a layer deny patterns add up, and the narrowest scope's allow list, ceiling, capture setting and each rate limit win; null lifts what broader scopes said. A denied request gets policy_denied (HTTP 403 on /v1, permission_error on /alt) with no upstream call; a rate limit gives 429 with Retry-After. A change reaches every gateway within about a second (plus SVC_POLICY_CACHE_MS where PolicyService is remote). Send If-Match: "<revision>" to change only the revision you read (412 otherwise).`;

/**
 * If-Match (RFC 9110 13.1.1) on a policy: `"3"`, the strong entity tag of the revision the caller
 * read; `*`, any policy in force. A weak tag never matches. Absent: any state.
 */
const preconditionOf = (request: FastifyRequest): { expectedRevision?: number } | 'any' | 'none' => {
  const raw = request.headers['if-match'];
  if (raw === undefined) return 'none';
  const value = typeof raw === 'string' ? raw.trim() : '';
  if (value === '*') return 'any';
  const m = /^"(\d{1,9})"$/.exec(value);
  if (m) return { expectedRevision: Number(m[1]) };
  if (/^W\//.test(value))
    throw new ServiceError(
      'precondition_failed',
      'a weak entity tag never matches: send If-Match: "<revision>"',
    );
  throw new ServiceError(
    'bad_request',
    'If-Match must be the policy revision you read, quoted (e.g. "3"), or *',
    {
      param: 'If-Match',
    },
  );
};

/**
 * The query of a policy route: only the parameters it knows, each once. A misspelled `layer` must
 * not quietly write the workspace's policy where the operator meant a binding one.
 */
const queryOf = (request: FastifyRequest, known: readonly string[]): Record<string, string | undefined> => {
  const q = (request.query ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(q)) {
    if (!known.includes(name))
      throw new ServiceError(
        'bad_request',
        `unknown query parameter ${JSON.stringify(name.slice(0, 64))}${known.length ? ` (this route takes ${known.join(', ')})` : ''}`,
        { param: name.slice(0, 64) },
      );
    if (typeof value !== 'string')
      throw new ServiceError('bad_request', `${name} must be given once`, { param: name });
  }
  return q as Record<string, string | undefined>;
};

const layerOf = (request: FastifyRequest): PolicyLayer => {
  const raw = queryOf(request, ['layer']).layer;
  if (raw === undefined) return 'workspace';
  if (typeof raw === 'string' && (POLICY_LAYERS as readonly string[]).includes(raw))
    return raw as PolicyLayer;
  throw new ServiceError('bad_request', `layer must be one of ${POLICY_LAYERS.join(', ')}`, {
    param: 'layer',
  });
};

const anyJson = z.unknown();

/**
 * Policies (SPEC 1.9) through the control plane: PUT sets a whole document, DELETE clears, GET reads
 * the policy in force on one organization, project or API key and GET .../policy/history every
 * revision; GET /api/policies lists the policies the caller sees. Members read, managers change.
 */
export const registerPolicyRoutes = (
  app: FastifyInstance,
  cp: ControlPlaneCommands,
  reads: ControlPlaneReads,
  who: (request: FastifyRequest) => Principal,
): void => {
  app.get('/api/policies', async (request) => {
    const p = who(request);
    const q = queryOf(request, ['org_id']);
    return {
      data: await reads.policies({ orgId: q.org_id, workspaceIds: visibleWorkspaces(p) }),
      guidance: POLICY_GUIDANCE,
    };
  });

  const targets: [PolicyScope, string, string][] = [
    ['org', '/api/orgs/:org_id/policy', 'org_id'],
    ['project', '/api/projects/:project_id/policy', 'project_id'],
    ['api_key', '/api/api-keys/:api_key_id/policy', 'api_key_id'],
  ];
  for (const [scope, path, param] of targets) {
    const targetOf = async (request: FastifyRequest, role: 'member' | 'manager') => {
      const p = who(request);
      const id = (request.params as Record<string, string>)[param]!;
      const layer = layerOf(request);
      const owner = await requireOwner(reads, scope, id);
      requireWorkspace(p, owner.workspace_id, role);
      // The operator's policy binds the workspace: its members read it, only the operator changes it.
      if (role === 'manager' && layer === 'operator') requireAdmin(p);
      return { p, target: { layer, scope, id } };
    };
    const answer = async (reply: FastifyReply, target: { layer: PolicyLayer; id: string }) => {
      const row = await reads.policy(target.layer, scope, target.id);
      if (row) reply.header('etag', `"${row.revision}"`);
      if (!row?.document)
        throw new ServiceError('not_found', `no ${target.layer} policy is set on this ${scopeName}`);
      return { ...row, guidance: POLICY_GUIDANCE };
    };
    /** The expected revision of a change, or a 412 when If-Match: * meets no policy in force. */
    const expectedOf = async (request: FastifyRequest, target: { layer: PolicyLayer; id: string }) => {
      const pre = preconditionOf(request);
      if (pre === 'none') return {};
      if (pre !== 'any') return pre;
      const row = await reads.policy(target.layer, scope, target.id);
      if (!row?.document)
        throw new ServiceError(
          'precondition_failed',
          `If-Match: * but no ${target.layer} policy is set on this ${scopeName}`,
        );
      return { expectedRevision: row.revision };
    };
    const scopeName = scope === 'api_key' ? 'API key' : scope;
    app.get(path, async (request, reply) => {
      const { target } = await targetOf(request, 'member');
      return answer(reply, target);
    });
    app.get(`${path}/history`, async (request) => {
      const { target } = await targetOf(request, 'member');
      // Both layers unless one is named.
      const only = queryOf(request, ['layer']).layer === undefined ? null : target.layer;
      const history = await cp.policyHistory(target);
      return { data: only ? history.filter((h) => h.layer === only) : history };
    });
    app.put(path, routeDoc({ body: policyDocumentSchema }), async (request, reply) => {
      const { p, target } = await targetOf(request, 'manager');
      const expected = await expectedOf(request, target);
      await cp.setPolicy(actorOf(p), target, parseBody(anyJson, request.body), expected);
      return answer(reply, target);
    });
    app.delete(path, async (request, reply) => {
      const { p, target } = await targetOf(request, 'manager');
      await cp.clearPolicy(actorOf(p), target, await expectedOf(request, target));
      return reply.code(204).send();
    });
  }
};
