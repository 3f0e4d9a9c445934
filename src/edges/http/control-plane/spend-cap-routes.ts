import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { ControlPlaneCommands } from '../../../commands/control-plane/commands.js';
import { requireOwner } from '../../../commands/ports.js';
import type { SpendCapLevel } from '../../../commands/spend-cap/events.js';
import { ServiceError } from '../../../lib/errors.js';
import type { ControlPlaneReads } from '../../../projections/control-plane/reads.js';
import { parseBody } from '../body.js';
import { routeDoc } from '../openapi.js';
import { actorOf, type Principal, requireWorkspace, visibleWorkspaces } from './auth.js';

/** What every answer repeats, so a console or script knows how the cap is enforced. */
const CAP_GUIDANCE =
  'A spend cap limits the UTC calendar month: once the month-to-date priced spend of the org, project or API key reaches the cap, the gateway refuses its requests with spend_cap_exceeded (HTTP 402 on /v1, permission_error 403 on /alt) without calling any upstream. Spend is counted after ingest and the gateway refreshes it every few seconds, so a burst can overshoot the cap slightly.';

const capBody = z.strictObject({ monthly_usd: z.string() });

/**
 * Monthly spend caps (SPEC 8) through the control plane: PUT sets, DELETE clears, GET reads the cap
 * of one organization, project or API key; GET /api/spend-caps lists the caps the caller sees.
 * Members read, managers change (as for tracing and keys).
 */
export const registerSpendCapRoutes = (
  app: FastifyInstance,
  cp: ControlPlaneCommands,
  reads: ControlPlaneReads,
  who: (request: FastifyRequest) => Principal,
): void => {
  app.get('/api/spend-caps', async (request) => {
    const p = who(request);
    const q = request.query as Record<string, string | undefined>;
    return {
      data: await reads.spendCaps({ orgId: q.org_id, workspaceIds: visibleWorkspaces(p) }),
      guidance: CAP_GUIDANCE,
    };
  });

  const targets: [SpendCapLevel, string, string][] = [
    ['org', '/api/orgs/:org_id/spend-cap', 'org_id'],
    ['project', '/api/projects/:project_id/spend-cap', 'project_id'],
    ['api_key', '/api/api-keys/:api_key_id/spend-cap', 'api_key_id'],
  ];
  for (const [level, path, param] of targets) {
    const targetOf = async (request: FastifyRequest, role: 'member' | 'manager') => {
      const p = who(request);
      const id = (request.params as Record<string, string>)[param]!;
      const owner = await requireOwner(reads, level, id);
      requireWorkspace(p, owner.workspace_id, role);
      return { p, id };
    };
    app.get(path, async (request) => {
      const { id } = await targetOf(request, 'member');
      const cap = await reads.spendCap(level, id);
      if (!cap) throw new ServiceError('not_found', `no spend cap is set on this ${level}`);
      return { ...cap, guidance: CAP_GUIDANCE };
    });
    app.put(path, routeDoc({ body: capBody }), async (request) => {
      const { p, id } = await targetOf(request, 'manager');
      const body = parseBody(capBody, request.body);
      await cp.setSpendCap(actorOf(p), { level, id }, { monthlyUsd: body.monthly_usd });
      return { ...(await reads.spendCap(level, id)), guidance: CAP_GUIDANCE };
    });
    app.delete(path, async (request, reply) => {
      const { p, id } = await targetOf(request, 'manager');
      await cp.setSpendCap(actorOf(p), { level, id }, 'clear');
      return reply.code(204).send();
    });
  }
};
