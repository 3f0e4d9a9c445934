import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLICY_CASES, query } from '../../../test/fixtures/policy-cases.js';
import { grpcClient } from '../../../test/helpers/grpc.js';
import { PolicyUnreachableError } from '../../gateway/policy.js';
import type { PolicyQuery } from '../../policy/evaluate.js';
import { PolicySet } from '../../policy/set.js';
import { addPolicyService, POLICY_PROTO, POLICY_SERVICE } from './policy.js';
import { grpcPolicy } from './policy-client.js';
import { bindGrpc } from './server.js';

// SPEC 4.8 PolicyService.Evaluate: one table of cases evaluated in process and across gRPC gives
// identical decisions; the service wants the service token (SPEC 5).
const TOKEN = 'policy-service-token';
let server: grpc.Server;
let port: number;
let current = new PolicySet([]);

beforeAll(async () => {
  server = new grpc.Server();
  addPolicyService(server, (q) => current.evaluate(q), TOKEN);
  port = await bindGrpc(server, '127.0.0.1', 0);
});
afterAll(() => {
  server?.forceShutdown();
});

describe('PolicyService.Evaluate', () => {
  it('gives the in-process decision for every case of the table', async () => {
    const client = grpcPolicy(`127.0.0.1:${port}`, TOKEN);
    try {
      for (const c of POLICY_CASES) {
        current = new PolicySet(c.policies);
        const local = current.evaluate(c.query);
        expect(await client.evaluate(c.query, 5_000), c.name).toEqual(local);
      }
      // The query crosses the wire whole: a stated 0 stays 0 and an absent max_tokens stays absent.
      const seen: PolicyQuery[] = [];
      const set = new PolicySet([]);
      current = {
        evaluate: (q: PolicyQuery) => {
          seen.push(q);
          return set.evaluate(q);
        },
      } as unknown as PolicySet;
      for (const q of [query({ max_tokens: 0 }), query(), query({ max_tokens: 2 ** 40, candidates: [] })])
        await client.evaluate(q, 5_000);
      expect(seen).toEqual([
        query({ max_tokens: 0 }),
        query(),
        query({ max_tokens: 2 ** 40, candidates: [] }),
      ]);
    } finally {
      client.close();
    }
  });

  it('answers UNAUTHENTICATED without the service token, or with another', async () => {
    for (const token of [undefined, 'wrong']) {
      const c = grpcClient(port, POLICY_PROTO, POLICY_SERVICE, token);
      const err = (await c
        .call('Evaluate', { org_id: 'o', project_id: 'p', api_key_id: 'k', route: '/v1/chat/completions' })
        .catch((e: unknown) => e)) as grpc.ServiceError;
      c.close();
      expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    }
  });

  it('a refused query reaches the gateway as its 400, never as an unreachable service', async () => {
    const client = grpcPolicy(`127.0.0.1:${port}`, TOKEN);
    const err = await client
      .evaluate({ ...query(), model: 'm'.repeat(5_000) }, 5_000)
      .catch((e: unknown) => e);
    client.close();
    expect(err).toMatchObject({ code: 'bad_request' });
  });

  it('answers INVALID_ARGUMENT for a query without its tenant', async () => {
    const c = grpcClient(port, POLICY_PROTO, POLICY_SERVICE, TOKEN);
    const err = (await c
      .call('Evaluate', { route: '/v1/chat/completions' })
      .catch((e: unknown) => e)) as grpc.ServiceError;
    c.close();
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/org_id is required/);
  });

  it('fails the call when the deadline passes (the gateway then follows its fail mode)', async () => {
    const slow = new grpc.Server();
    addPolicyService(
      slow,
      () => {
        const until = Date.now() + 300;
        while (Date.now() < until);
        return new PolicySet([]).evaluate(query());
      },
      TOKEN,
    );
    const slowPort = await bindGrpc(slow, '127.0.0.1', 0);
    const client = grpcPolicy(`127.0.0.1:${slowPort}`, TOKEN);
    try {
      const err = await client.evaluate(query(), 50).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PolicyUnreachableError);
      expect(((err as Error).cause as grpc.ServiceError).code).toBe(grpc.status.DEADLINE_EXCEEDED);
    } finally {
      client.close();
      slow.forceShutdown();
    }
  });
});
