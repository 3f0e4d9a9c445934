import { describe, expect, it } from 'vitest';
import { parseChatBody } from '../edges/http/gateway/chat.js';
import type { ChatMessage } from '../providers/contract.js';
import type { RegistryEndpoint } from '../providers/endpoint.js';
import { EMPTY_REGISTRY } from './registry/snapshot.js';
import { primaryDialect } from './render/dialect.js';
import { type GatewayDeps, RequestScope } from './scope.js';
import type { TenancySnapshot } from './tenancy.js';

// SPEC 4.1 rule 10, 7.6 rule 2: a served request is priced or marked billing-failed, whatever its
// body held, and recorded once.

const tenancy: TenancySnapshot = {
  org: () => undefined,
  projectTracing: () => false,
  credentials: () => null,
  hasConnection: () => false,
};

const scopeOf = (messages: unknown) => {
  const records: unknown[] = [];
  const canonical = parseChatBody({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
  canonical.messages = messages as ChatMessage[];
  const deps = {
    registry: () => EMPTY_REGISTRY,
    tenancy: () => tenancy,
    observe: () => {},
    onCompleted: (c: unknown) => records.push(c),
  } as unknown as GatewayDeps;
  const scope = new RequestScope(deps, {
    canonical,
    dialect: primaryDialect,
    key: { orgId: 'o', projectId: 'p', workspaceId: 'w', apiKeyId: 'k' } as never,
    requestId: 'req_1',
    requestBytes: 10,
    tracingHeader: undefined,
    sessionHeader: undefined,
    client: { watch: () => undefined, release: () => undefined } as never,
  });
  return { scope, records };
};

const endpoint = { lane: 'openai', model: 'm', cards: [] } as unknown as RegistryEndpoint;
const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };

describe('RequestScope.price', () => {
  it('a body pricing cannot read marks billing failed instead of throwing', () => {
    const { scope } = scopeOf(null);
    scope.price(endpoint, 'chat', usage, undefined);
    expect(scope.completed.pricing).toMatchObject({
      billing_status: 'failed',
      billing_reason: 'unreadable_request',
      total: '0',
    });
    expect(scope.completed.usage).toEqual(usage);
  });

  it('content parts that are not objects are no audio, not a failure', () => {
    const { scope } = scopeOf([{ role: 'user', content: [null, 5] }]);
    scope.price(endpoint, 'chat', usage, undefined);
    expect(scope.completed.pricing?.billing_reason).not.toBe('unreadable_request');
  });
});

describe('RequestScope.finish', () => {
  it('records a request once, a broken one as a 500', async () => {
    const { scope, records } = scopeOf([{ role: 'user', content: 'x' }]);
    scope.finishBroken();
    scope.finish(200);
    await new Promise((r) => setImmediate(r));
    expect(records).toHaveLength(1);
    expect(scope.completed).toMatchObject({ httpStatus: 500, status: 'error', errorCode: 'internal_error' });
  });
});
