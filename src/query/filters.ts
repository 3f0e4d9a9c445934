import type { QueryParams } from '../analytics/port.js';
import { ServiceError } from '../lib/errors.js';
import type { TimeWindow } from './window.js';

/**
 * WHERE clauses over `requests` (or a line table, which repeats the same tenancy columns). Every
 * value is a bound `{name:Type}` parameter; the SQL text holds only fixed fragments.
 */
export class Where {
  readonly clauses: string[] = [];
  readonly params: QueryParams = {};

  add(clause: string, params: QueryParams = {}): this {
    this.clauses.push(clause);
    Object.assign(this.params, params);
    return this;
  }

  get sql(): string {
    return this.clauses.length ? `WHERE ${this.clauses.join(' AND ')}` : '';
  }
}

export interface TenantFilter {
  orgIds: readonly string[];
  projectId: string | null;
  apiKeyId?: string | null;
  window: TimeWindow;
}

export const tenantWhere = (t: TenantFilter): Where => {
  const w = new Where().add('org_id IN {org_ids:Array(String)}', { org_ids: [...t.orgIds] });
  if (t.projectId) w.add('project_id = {project_id:String}', { project_id: t.projectId });
  if (t.apiKeyId) w.add('api_key_id = {api_key_id:String}', { api_key_id: t.apiKeyId });
  if (t.window.from) w.add("started_at >= {from:DateTime64(3, 'UTC')}", { from: t.window.from });
  if (t.window.to) w.add("started_at < {to:DateTime64(3, 'UTC')}", { to: t.window.to });
  return w;
};

export interface RequestFilters {
  q?: string;
  provider?: string;
  model?: string;
  status_class?: string;
  is_stream?: string;
  session_id?: string;
  status_code?: string;
}

const bool = (v: string, param: string): boolean => {
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new ServiceError('bad_request', `${param} must be true or false`, { param });
};

/** Narrows `w` by the list filters of SPEC 4.5. */
export const requestFilters = (w: Where, f: RequestFilters): Where => {
  if (f.q)
    w.add(
      `(positionCaseInsensitive(request_id, {q:String}) > 0 OR positionCaseInsensitive(model_requested, {q:String}) > 0
        OR positionCaseInsensitive(ifNull(model_served, ''), {q:String}) > 0 OR positionCaseInsensitive(ifNull(session_id, ''), {q:String}) > 0
        OR positionCaseInsensitive(ifNull(end_user_id, ''), {q:String}) > 0 OR positionCaseInsensitive(ifNull(error_code, ''), {q:String}) > 0)`,
      { q: f.q },
    );
  if (f.provider) w.add('provider = {provider:String}', { provider: f.provider });
  if (f.model)
    w.add('(model_served = {model:String} OR model_requested = {model:String})', { model: f.model });
  if (f.session_id) w.add('session_id = {session_id:String}', { session_id: f.session_id });
  if (f.is_stream) w.add('stream = {is_stream:Bool}', { is_stream: bool(f.is_stream, 'is_stream') });
  if (f.status_class) {
    const m = /^([1-5])xx$/.exec(f.status_class);
    if (!m)
      throw new ServiceError('bad_request', 'status_class must be one of 2xx, 3xx, 4xx, 5xx', {
        param: 'status_class',
      });
    w.add('intDiv(http_status, 100) = {status_class:UInt8}', { status_class: Number(m[1]) });
  }
  if (f.status_code) {
    const code = Number(f.status_code);
    if (!Number.isInteger(code) || code < 100 || code > 599)
      throw new ServiceError('bad_request', 'status_code must be an HTTP status', { param: 'status_code' });
    w.add('http_status = {status_code:UInt16}', { status_code: code });
  }
  return w;
};
