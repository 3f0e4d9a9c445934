import type * as grpc from '@grpc/grpc-js';
import type { PolicyDecision, PolicyQuery } from '../../policy/evaluate.js';
import type { PolicyServiceHandlers } from './generated/svc/policy/v1/PolicyService.js';
import { decisionToWire, queryFromWire } from './policy-wire.js';
import { loadService } from './server.js';
import { unary } from './unary.js';

export const POLICY_PROTO = 'svc/policy/v1/policy.proto';
export const POLICY_SERVICE = 'svc.policy.v1.PolicyService';

/** PolicyService.Evaluate (SPEC 4.8) over the policy role's evaluator; service-token auth. */
export const addPolicyService = (
  server: grpc.Server,
  evaluate: (query: PolicyQuery) => PolicyDecision,
  serviceToken: string,
): void => {
  server.addService(loadService(POLICY_PROTO, POLICY_SERVICE), {
    Evaluate: unary(serviceToken, async (r) => decisionToWire(evaluate(queryFromWire(r)))),
  } satisfies PolicyServiceHandlers);
};
