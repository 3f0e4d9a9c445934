import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

/**
 * A fake payment API (api.stripe.com's wire) for the wallet tests: PaymentIntent create and
 * retrieve, Refund create, with Idempotency-Key replay and Stripe's error envelope. The service's
 * `stripe` SDK reaches it through SVC_PAYMENT_API_BASE. Webhook deliveries are built here and
 * signed with the SDK's own `webhooks.generateTestHeaderString`.
 */

export interface FakePaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_received: number;
  currency: string;
  status: 'requires_payment_method' | 'succeeded';
  client_secret: string;
  metadata: Record<string, string>;
  created: number;
  livemode: false;
}

export interface FakeRefund {
  id: string;
  object: 'refund';
  amount: number;
  currency: string;
  payment_intent: string;
  status: 'succeeded';
  metadata: Record<string, string>;
  created: number;
}

export interface PaymentApiRequest {
  method: string;
  path: string;
  form: Record<string, unknown>;
  idempotencyKey: string | undefined;
  apiKey: string | undefined;
}

export interface FakePaymentApi {
  readonly url: string;
  readonly requests: readonly PaymentApiRequest[];
  readonly intents: ReadonlyMap<string, FakePaymentIntent>;
  readonly refunds: readonly FakeRefund[];
  /** Marks the intent paid and returns its payment_intent.succeeded event, as JSON text. */
  succeed(paymentIntentId: string, options?: { eventId?: string }): string;
  /**
   * Where the browser confirm step (POST /v1/payment_intents/:id/confirm with the publishable key,
   * as Stripe.js sends it) delivers its signed payment_intent.succeeded webhook.
   */
  deliverWebhooksTo(url: string, secret: string): void;
  /** A webhook delivery of `payload` signed with `secret` at `timestamp` (seconds; default now). */
  sign(payload: string, secret: string, timestamp?: number): string;
  close(): Promise<void>;
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;
const now = () => Math.floor(Date.now() / 1_000);

/** `metadata[workspace_id]=x&amount=5` -> { metadata: { workspace_id: 'x' }, amount: '5' }. */
const parseForm = (text: string): Record<string, unknown> => {
  const out: Record<string, unknown> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const path = key.replaceAll(']', '').split('[');
    let node = out;
    for (const segment of path.slice(0, -1)) {
      node[segment] ??= {};
      node = node[segment] as Record<string, unknown>;
    }
    node[path.at(-1)!] = value;
  }
  return out;
};

const stripeError = (res: ServerResponse, status: number, message: string, param?: string) => {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
  res.end(JSON.stringify({ error: { type: 'invalid_request_error', message, ...(param ? { param } : {}) } }));
};

export const startFakePaymentApi = async (
  options: { apiKey?: string; publishableKey?: string } = {},
): Promise<FakePaymentApi> => {
  const requests: PaymentApiRequest[] = [];
  let webhookTarget: { url: string; secret: string } | null = null;
  const intents = new Map<string, FakePaymentIntent>();
  const refunds: FakeRefund[] = [];
  const replies = new Map<string, { status: number; body: string }>();

  const succeed = (paymentIntentId: string, opts: { eventId?: string } = {}): string => {
    const intent = intents.get(paymentIntentId);
    if (!intent) throw new Error(`no payment intent ${paymentIntentId}`);
    intent.status = 'succeeded';
    intent.amount_received = intent.amount;
    return JSON.stringify({
      id: opts.eventId ?? id('evt'),
      object: 'event',
      api_version: '2025-01-01',
      created: now(),
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type: 'payment_intent.succeeded',
      data: { object: intent },
    });
  };
  const sign = (payload: string, secret: string, timestamp?: number): string =>
    Stripe.webhooks.generateTestHeaderString({ payload, secret, ...(timestamp ? { timestamp } : {}) });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://fake');
    const apiKey = /^Bearer\s+(\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const idempotencyKey = req.headers['idempotency-key'] as string | undefined;
    const form = parseForm(Buffer.concat(chunks).toString('utf8'));
    requests.push({ method: req.method ?? 'GET', path: url.pathname, form, idempotencyKey, apiKey });

    // The browser's step (Stripe.js's wire): CORS, the publishable key and the intent's client
    // secret as form fields, never the secret key.
    res.setHeader('access-control-allow-origin', '*');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'access-control-allow-methods': 'POST',
        'access-control-allow-headers': 'content-type',
      });
      return res.end();
    }
    const confirm = /^\/v1\/payment_intents\/([^/]+)\/confirm$/.exec(url.pathname);
    if (req.method === 'POST' && confirm) {
      if (!options.publishableKey || form.key !== options.publishableKey)
        return stripeError(res, 401, 'Invalid publishable key provided');
      const intent = intents.get(confirm[1]!);
      if (!intent || form.client_secret !== intent.client_secret)
        return stripeError(res, 404, 'No such payment_intent', 'client_secret');
      if (typeof form.payment_method !== 'string' || !form.payment_method.startsWith('pm_'))
        return stripeError(res, 400, 'A payment method is required', 'payment_method');
      const event = succeed(intent.id);
      if (webhookTarget) {
        const target = webhookTarget;
        // Delivered after the answer, as the provider does.
        setTimeout(() => {
          void fetch(target.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'stripe-signature': sign(event, target.secret) },
            body: event,
          }).catch(() => undefined);
        }, 10);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(intent));
    }
    if (options.apiKey && apiKey !== options.apiKey) return stripeError(res, 401, 'Invalid API Key provided');

    const replayKey = idempotencyKey ? `${req.method} ${url.pathname} ${idempotencyKey}` : null;
    const stored = replayKey ? replies.get(replayKey) : undefined;
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      if (replayKey) replies.set(replayKey, { status, body: text });
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': id('req') });
      res.end(text);
    };
    if (stored) {
      res.writeHead(stored.status, { 'content-type': 'application/json', 'idempotent-replayed': 'true' });
      return res.end(stored.body);
    }

    if (req.method === 'POST' && url.pathname === '/v1/payment_intents') {
      const amount = Number(form.amount);
      if (!Number.isInteger(amount) || amount < 50) return stripeError(res, 400, 'Invalid amount', 'amount');
      const piId = id('pi');
      const intent: FakePaymentIntent = {
        id: piId,
        object: 'payment_intent',
        amount,
        amount_received: 0,
        currency: String(form.currency ?? 'usd'),
        status: 'requires_payment_method',
        client_secret: `${piId}_secret_${randomBytes(8).toString('hex')}`,
        metadata: (form.metadata as Record<string, string> | undefined) ?? {},
        created: now(),
        livemode: false,
      };
      intents.set(piId, intent);
      return send(200, intent);
    }
    const retrieve = /^\/v1\/payment_intents\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && retrieve) {
      const intent = intents.get(retrieve[1]!);
      return intent ? send(200, intent) : stripeError(res, 404, 'No such payment_intent');
    }
    if (req.method === 'POST' && url.pathname === '/v1/refunds') {
      const intent = intents.get(String(form.payment_intent));
      if (!intent) return stripeError(res, 404, `No such payment_intent: '${String(form.payment_intent)}'`);
      if (intent.status !== 'succeeded')
        return stripeError(res, 400, 'This PaymentIntent does not have a successful charge to refund.');
      const amount = Number(form.amount ?? intent.amount_received);
      const refunded = refunds
        .filter((r) => r.payment_intent === intent.id)
        .reduce((a, r) => a + r.amount, 0);
      if (amount > intent.amount_received - refunded)
        return stripeError(res, 400, 'Refund amount is greater than the unrefunded amount', 'amount');
      const refund: FakeRefund = {
        id: id('re'),
        object: 'refund',
        amount,
        currency: intent.currency,
        payment_intent: intent.id,
        status: 'succeeded',
        metadata: (form.metadata as Record<string, string> | undefined) ?? {},
        created: now(),
      };
      refunds.push(refund);
      return send(200, refund);
    }
    return stripeError(res, 404, `Unrecognized request URL (${req.method}: ${url.pathname})`);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`fake payment API failed: ${String(err)}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    intents,
    refunds,
    succeed,
    sign,
    deliverWebhooksTo: (url, secret) => {
      webhookTarget = { url, secret };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};
