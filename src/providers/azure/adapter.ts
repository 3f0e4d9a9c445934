import { callUpstream } from '../http.js';
import { openAiChatBody, openAiShapedOutcome } from '../openai/adapter.js';
import type { AttemptOutcome, ProviderAdapter } from '../provider.js';
import type { DeploymentHostAdapter } from './origin.js';
import { azureHeaders, chatUrl, deploymentCall } from './requests.js';

/**
 * The deployment-host adapter (SPEC 4.7): the chat body goes out as the caller sent it (tools,
 * tool_choice and stream fields included) to the mapped deployment, and the reply is already in the
 * primary dialect, so the reference adapter's reply and stream reading serve it unchanged.
 */
const deploymentHostAdapter = (id: DeploymentHostAdapter): ProviderAdapter => ({
  id,
  chat: async (request, target): Promise<AttemptOutcome> => {
    const prepared = deploymentCall(target.endpoint, target.credentials);
    if (!prepared.ok) return prepared;
    const { call } = prepared;
    const called = await callUpstream({
      url: chatUrl(call.origin, call.deployment, call.metadata.api_version),
      headers: azureHeaders(target.credentials.secret, target.requestId, request.stream),
      body: openAiChatBody(request, target.endpoint.provider_model_id),
      signal: target.signal,
      timeoutMs: target.timeoutMs,
      bodyTimeoutMs: target.timeoutMs,
    });
    if (!called.ok) return called;
    return openAiShapedOutcome(called.response, request.stream, target.limits);
  },
});

export const azureAdapter: ProviderAdapter = deploymentHostAdapter('azure');
export const azureGovAdapter: ProviderAdapter = deploymentHostAdapter('azure-gov');
