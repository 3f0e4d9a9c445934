import { formDataBody } from '../form-data.js';
import { attemptCall, callUpstream } from '../http.js';
import { openAiChatBody, openAiShapedOutcome } from '../openai/adapter.js';
import {
  embeddingsReply,
  imageEvents,
  imagesReply,
  jsonOperationOutcome,
  responsesReply,
} from '../openai/operations.js';
import {
  type AttemptOutcome,
  type JsonOutcome,
  type ProviderAdapter,
  unsupportedOperation,
} from '../provider.js';
import type { DeploymentHostAdapter } from './origin.js';
import {
  azureHeaders,
  chatUrl,
  deploymentCall,
  deploymentPath,
  embeddingsRequest,
  responsesRequest,
} from './requests.js';

/**
 * The deployment-host adapter (SPEC 4.7): the chat body goes out as the caller sent it (tools,
 * tool_choice and stream fields included) to the mapped deployment, and the reply is already in the
 * primary dialect, so the reference adapter's reply and stream reading serve it unchanged.
 * Embeddings and images (generations as JSON, edits as multipart) go to the deployment path too;
 * responses to the resource host's v1 surface. Variations are not an Azure operation. A model
 * without a deployment mapping fails every operation before any upstream call, fallback-eligible.
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
      destination: call.destination,
      ...attemptCall(target),
    });
    if (!called.ok) return called;
    return openAiShapedOutcome(called.response, request.stream, target.limits);
  },
  embeddings: async (request, target): Promise<JsonOutcome> => {
    const prepared = deploymentCall(target.endpoint, target.credentials);
    if (!prepared.ok) return prepared;
    const { endpoint, credentials } = target;
    const out = embeddingsRequest(request.raw, prepared.call, endpoint, credentials.secret, target.requestId);
    const called = await callUpstream({ ...out, ...attemptCall(target) });
    if (!called.ok) return called;
    return jsonOperationOutcome(called.response, {
      stream: false,
      limits: target.limits,
      // The data plane reports the deployment's base model; callers see the catalog model name.
      reply: embeddingsReply(endpoint.model),
    });
  },
  images: async (request, target): Promise<JsonOutcome> => {
    const operation = request.route.slice('/v1/'.length);
    if (operation !== 'images/generations' && operation !== 'images/edits')
      return { ok: false, failure: unsupportedOperation(id, operation) };
    const prepared = deploymentCall(target.endpoint, target.credentials);
    if (!prepared.ok) return prepared;
    const { call } = prepared;
    // The deployment decides the model; the body names the catalog model, as for embeddings.
    const fields = { ...request.raw, model: target.endpoint.model };
    const form = request.uploads ? formDataBody(fields, request.uploads) : null;
    const headers = azureHeaders(target.credentials.secret, target.requestId, request.stream);
    const called = await callUpstream({
      url: deploymentPath(call.origin, call.deployment, operation, call.metadata.api_version),
      destination: call.destination,
      headers: form ? { ...headers, 'content-type': form.contentType } : headers,
      body: form ? form.body : JSON.stringify(fields),
      ...attemptCall(target),
    });
    if (!called.ok) return called;
    return jsonOperationOutcome(called.response, {
      stream: request.stream,
      limits: target.limits,
      reply: imagesReply,
      events: imageEvents,
    });
  },
  responses: async (request, target): Promise<JsonOutcome> => {
    const prepared = deploymentCall(target.endpoint, target.credentials);
    if (!prepared.ok) return prepared;
    const out = responsesRequest(request.raw, prepared.call, target.credentials.secret, target.requestId);
    const called = await callUpstream({ ...out, ...attemptCall(target) });
    if (!called.ok) return called;
    return jsonOperationOutcome(called.response, {
      stream: request.stream,
      limits: target.limits,
      reply: responsesReply,
    });
  },
});

export const azureAdapter: ProviderAdapter = deploymentHostAdapter('azure');
export const azureGovAdapter: ProviderAdapter = deploymentHostAdapter('azure-gov');
