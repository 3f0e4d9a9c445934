import type { CanonicalRequest } from '../contract.js';
import { type Destination, destinationOf } from '../destinations.js';
import { attemptCall, callUpstream, readCapped, type UpstreamResponse } from '../http.js';
import type { AttemptFailure, AttemptOutcome, AttemptTarget, ProviderAdapter } from '../provider.js';
import { type AccessKeyPair, parseAccessKeyPair } from './credentials.js';
import { runtimeEmbeddings } from './embeddings.js';
import { type RuntimeEvent, runtimeEvents } from './eventstream.js';
import { bodyMessage, documentedStatus, exceptionFailure, exceptionName } from './exceptions.js';
import {
  encodeModelId,
  type ManagedRuntimeAdapter,
  resolveRuntimeOrigin,
  runtimeOriginSource,
} from './origin.js';
import { converseReply } from './reply.js';
import { signRequest } from './sign.js';
import { converseChunks } from './stream.js';
import { translateChat } from './translate.js';

/**
 * The managed-runtime adapter (SPEC 4.7): chat completions through Converse and
 * ConverseStream, SigV4-signed with the connection's access key pair.
 */

const REQUEST_ID_HEADER = 'x-svc-request-id';

const failed = (failure: AttemptFailure): AttemptOutcome => ({ ok: false, failure });

/** A candidate that cannot be called as configured: the next one may be. */
const misconfigured = (message: string): { ok: false; failure: AttemptFailure } => ({
  ok: false,
  failure: { kind: 'MissingProviderKey', message, retryable: false, fallback: true },
});

/** A request the runtime cannot take, whoever serves it: 400 before any upstream call. */
const clientError = (message: string, param: string): AttemptOutcome => {
  // `param` rides along for the renderer's error.param (SPEC 4.1 rule 6 names param n).
  const surface = { status: 400, code: 'invalid_request_error' as const, param };
  return failed({
    kind: 'Internal',
    message,
    providerMessage: message,
    retryable: false,
    fallback: false,
    surface,
  });
};

const upstreamTrouble = (message: string): AttemptOutcome =>
  failed({ kind: 'UpstreamError', message, retryable: true, fallback: true });

const parseJson = (bytes: Buffer): unknown => {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
};

const headerOf = (response: UpstreamResponse, name: string): string | undefined => {
  const v = response.headers[name];
  return Array.isArray(v) ? v[0] : v;
};

/** A non-200 answer: its exception by header or body, mapped per SPEC 7.5. */
const statusFailure = async (response: UpstreamResponse, cap: number): Promise<AttemptFailure> => {
  const { bytes } = await readCapped(response.body, cap).catch(() => ({ bytes: Buffer.alloc(0) }));
  const body = parseJson(bytes);
  const name = exceptionName(headerOf(response, 'x-amzn-errortype'), body);
  return exceptionFailure(name, response.statusCode, bodyMessage(body), cap);
};

const buffered = async (response: UpstreamResponse, target: AttemptTarget): Promise<AttemptOutcome> => {
  const max = target.limits.maxResponseBytes;
  let read: { bytes: Buffer; over: boolean };
  try {
    read = await readCapped(response.body, max);
  } catch {
    return upstreamTrouble('upstream reply read failed');
  }
  if (read.over) {
    return failed({
      kind: 'ResponseTooLarge',
      message: `upstream reply exceeded ${max} bytes`,
      retryable: false,
      fallback: true,
    });
  }
  const reply = converseReply(parseJson(read.bytes), target.endpoint.provider_model_id);
  return reply ? { ok: true, reply } : upstreamTrouble('upstream reply was not a Converse reply');
};

/**
 * Reads up to the first event before committing: an exception frame there is an ordinary attempt
 * failure (SPEC 7.5 retry and fallback apply, nothing reached the client); from the first event on,
 * failures end the stream in band.
 */
const streamed = async (response: UpstreamResponse, target: AttemptTarget): Promise<AttemptOutcome> => {
  const events = runtimeEvents(response.body, target.limits.maxResponseBytes);
  const release = () => {
    void events.return(undefined);
    response.body.destroy();
  };
  let first: IteratorResult<RuntimeEvent>;
  try {
    first = await events.next();
  } catch (err) {
    release();
    return upstreamTrouble(err instanceof Error ? err.message : 'upstream stream failed');
  }
  if (first.done) {
    release();
    return upstreamTrouble('upstream stream ended before any event');
  }
  const event = first.value;
  if (event.kind === 'exception') {
    release();
    const name = exceptionName(event.name, undefined);
    const cap = target.limits.maxErrorMessageBytes;
    return failed(exceptionFailure(name, documentedStatus(name), event.message, cap));
  }
  return { ok: true, stream: converseChunks(event, events, release) };
};

/** Where and as whom one candidate's runtime calls go, or why they cannot go anywhere. */
export interface RuntimeCall {
  origin: string;
  /** Whose choice the origin is (providers/destinations.ts). */
  destination: Destination;
  region: string;
  credentials: AccessKeyPair;
}

export const runtimeCall = (
  adapter: ManagedRuntimeAdapter,
  target: AttemptTarget,
): { ok: true; call: RuntimeCall } | { ok: false; failure: AttemptFailure } => {
  const { credentials, endpoint } = target;
  const pair = parseAccessKeyPair(credentials.secret);
  // The parser's message names fields only, never the secret's text.
  if (!pair.ok) return misconfigured(`the ${adapter} credential is unusable: ${pair.message}`);
  const region = credentials.metadata.region;
  if (typeof region !== 'string' || region === '')
    return misconfigured(`the ${adapter} credential has no metadata.region`);
  const origin = resolveRuntimeOrigin(adapter, credentials.baseUrl, endpoint.base_url, region);
  if (!origin.ok) return misconfigured(`the ${adapter} origin is unusable: ${origin.message}`);
  const destination = destinationOf(credentials, runtimeOriginSource(credentials.baseUrl, endpoint.base_url));
  return { ok: true, call: { origin: origin.value, destination, region, credentials: pair.value } };
};

/**
 * POST `{origin}/model/{provider_model_id}/{operation}`, signed over the exact body; a non-200
 * answer is already mapped per SPEC 7.5.
 */
export const postSigned = async (
  call: RuntimeCall,
  target: AttemptTarget,
  operation: 'converse' | 'converse-stream' | 'invoke',
  body: string,
  accept: string,
): Promise<{ ok: true; response: UpstreamResponse } | { ok: false; failure: AttemptFailure }> => {
  const url = `${call.origin}/model/${encodeModelId(target.endpoint.provider_model_id)}/${operation}`;
  const headers = await signRequest({
    method: 'POST',
    url,
    body,
    headers: { 'content-type': 'application/json', accept },
    credentials: call.credentials,
    region: call.region,
  });
  // Added after signing, so it travels upstream without entering SignedHeaders (SPEC 4.7).
  headers[REQUEST_ID_HEADER] = target.requestId;
  const called = await callUpstream({
    url,
    headers,
    body,
    destination: call.destination,
    ...attemptCall(target),
  });
  if (!called.ok) return called;
  if (called.response.statusCode !== 200)
    return {
      ok: false,
      failure: await statusFailure(called.response, target.limits.maxErrorMessageBytes),
    };
  return called;
};

const chat = async (
  adapter: ManagedRuntimeAdapter,
  request: CanonicalRequest,
  target: AttemptTarget,
): Promise<AttemptOutcome> => {
  const prepared = runtimeCall(adapter, target);
  if (!prepared.ok) return prepared;
  const translated = translateChat(request);
  if (!translated.ok) return clientError(translated.message, translated.param);
  const called = await postSigned(
    prepared.call,
    target,
    request.stream ? 'converse-stream' : 'converse',
    JSON.stringify(translated.request),
    request.stream ? 'application/vnd.amazon.eventstream' : 'application/json',
  );
  if (!called.ok) return called;
  return request.stream ? streamed(called.response, target) : buffered(called.response, target);
};

const managedRuntimeAdapter = (id: ManagedRuntimeAdapter): ProviderAdapter => ({
  id,
  chat: (request, target) => chat(id, request, target),
  // Text embeddings through the invoke operation; responses stay unsupported (SPEC 4.7).
  embeddings: (request, target) => {
    const prepared = runtimeCall(id, target);
    if (!prepared.ok) return Promise.resolve(prepared);
    return runtimeEmbeddings(id, request, target, (body, timeoutMs) =>
      postSigned(prepared.call, { ...target, timeoutMs }, 'invoke', body, 'application/json'),
    );
  },
});

export const bedrockAdapter = managedRuntimeAdapter('bedrock');
export const bedrockGovAdapter = managedRuntimeAdapter('bedrock-gov');
