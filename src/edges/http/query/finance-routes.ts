import type { FastifyInstance } from 'fastify';
import { ServiceError } from '../../../lib/errors.js';
import {
  activityManifest,
  assertActivityScope,
  isActivityPanel,
  PANEL_HELP,
  toManifestCsv,
} from '../../../query/activity.js';
import { readVerifiedBody } from '../../../query/body.js';
import { bindDimensions, parseDimensionKeys } from '../../../query/dimensions.js';
import { runExport, toCsv } from '../../../query/export.js';
import { PANELS, type Panel } from '../../../query/panels.js';
import { workspaceReport } from '../../../query/report.js';
import { findRequest } from '../../../query/requests.js';
import { orgScope, workspaceScope } from '../../../query/scope.js';
import { parseBoundedWindow, parseClosedMonth } from '../../../query/window.js';
import { paramOf, type QueryRouteContext, queryOf, scopeOf, startLiveStream } from './context.js';

/** Reports, exports, verified body fetch and the live session stream (SPEC 4.5). */
export const registerFinanceRoutes = (app: FastifyInstance, o: QueryRouteContext): void => {
  const a = o.analytics;

  app.get('/api/reports/workspace', async (request) => {
    const caller = o.caller(request);
    const q = queryOf(request);
    const ws = await workspaceScope(o, caller, q.workspace_id);
    const month = parseClosedMonth(q.month, new Date());
    const keys = parseDimensionKeys(q.dimension);
    if (keys.length > 1)
      throw new ServiceError('bad_request', 'the workspace report takes one dimension key', {
        param: 'dimension',
      });
    if (q.dimension_value !== undefined && keys.length === 0)
      throw new ServiceError('bad_request', 'dimension_value needs dimension', { param: 'dimension_value' });
    return workspaceReport(a, {
      workspaceId: ws.workspaceId,
      orgIds: ws.orgs.map((org) => org.org_id),
      projectId: ws.projectId,
      ...month,
      dimension: await bindDimensions(o.pool, [ws.workspaceId], keys),
      dimensionValue: q.dimension_value ?? null,
    });
  });

  app.get('/api/exports/panel', async (request, reply) => {
    const caller = o.caller(request);
    const q = queryOf(request);
    const panel = (q.panel ?? 'cost_detail') as Panel;
    if (!PANELS.includes(panel)) throw new ServiceError('bad_request', PANEL_HELP, { param: 'panel' });
    // Activity panels: org scope only, legacy manifest CSV (see query/activity.ts for the shape).
    if (isActivityPanel(panel)) assertActivityScope(panel, q, caller);
    const format = q.format ?? 'csv';
    if (format !== 'csv' && format !== 'json')
      throw new ServiceError('bad_request', 'format must be csv or json', { param: 'format' });
    const window = parseBoundedWindow(q, o.maxExportDays);
    const keys = parseDimensionKeys(q.dimension);
    let scope: {
      workspaceIds: string[];
      orgIds: string[];
      projectId: string | null;
      apiKeyId: string | null;
    };
    if (q.workspace_id && !q.org_id) {
      const ws = await workspaceScope(o, caller, q.workspace_id);
      scope = {
        workspaceIds: [ws.workspaceId],
        orgIds: ws.orgs.map((x) => x.org_id),
        projectId: ws.projectId,
        apiKeyId: null,
      };
    } else {
      const s = await orgScope(o, caller, q.org_id, q.project_id);
      let apiKeyId: string | null = null;
      if (q.api_key_id) {
        const key = await o.reads.apiKey(q.api_key_id);
        if (!key || key.org_id !== s.orgId || (s.projectId && key.project_id !== s.projectId))
          throw new ServiceError('forbidden', 'this API key is outside your scope', { param: 'api_key_id' });
        apiKeyId = key.api_key_id;
      }
      scope = { workspaceIds: [s.workspaceId], orgIds: [s.orgId], projectId: s.projectId, apiKeyId };
    }
    const result = await runExport(a, o.reads, {
      panel,
      ...scope,
      ...window,
      dimensions: await bindDimensions(o.pool, scope.workspaceIds, keys),
      maxRows: o.maxExportRows,
    });
    const name = `${panel}_${window.from.toISOString().slice(0, 10)}_${window.to.toISOString().slice(0, 10)}.${format}`;
    reply.header('content-disposition', `attachment; filename="${name}"`);
    const manifest = isActivityPanel(panel)
      ? activityManifest({
          panel,
          orgId: scope.orgIds[0]!,
          ...window,
          dimensionKeys: keys,
          generatedAt: o.now?.() ?? new Date(),
          rows: result.rows.length,
        })
      : null;
    if (format === 'json')
      return reply
        .type('application/json')
        .send({ panel, ...(manifest ? { manifest } : {}), columns: result.columns, rows: result.rows });
    return reply
      .type('text/csv; charset=utf-8')
      .send(manifest ? toManifestCsv(manifest, result) : toCsv(result));
  });

  app.get('/api/body/by-request/:request_id', async (request, reply) => {
    const s = await scopeOf(o, request);
    const q = queryOf(request);
    const side = q.side ?? 'response';
    if (side !== 'request' && side !== 'response')
      throw new ServiceError('bad_request', 'side must be request or response', { param: 'side' });
    if (!o.objects) throw new ServiceError('service_unavailable', 'the object store is not configured');
    const row = await findRequest(a, s.orgId, s.projectId, paramOf(request, 'request_id'));
    if (!row) throw new ServiceError('not_found', 'request not found');
    const bytes = await readVerifiedBody(o.objects, row, side);
    return reply
      .header('cache-control', 'private, no-store')
      .header('x-svc-body-blake3', String(row[side === 'request' ? 'req_body_blake3' : 'res_body_blake3']))
      .type('application/octet-stream')
      .send(bytes);
  });

  app.get('/api/sessions/:session_id/live', async (request, reply) => {
    const s = await scopeOf(o, request);
    const raw = reply.raw;
    const opened = o.live.open(
      { orgId: s.orgId, projectId: s.projectId, sessionId: paramOf(request, 'session_id') },
      (frame) => raw.write(frame),
    );
    startLiveStream(reply, opened, 'live streams');
  });
};
