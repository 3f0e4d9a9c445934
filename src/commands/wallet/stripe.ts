import Stripe from 'stripe';
import { z } from 'zod';
import type { Config } from '../../config/config.js';
import { describeError, ServiceError } from '../../lib/errors.js';
import type { PaymentProvider, PaymentWebhookEvent } from './ports.js';

/**
 * The Stripe adapter of the payment port (src/commands/wallet/ports.ts), on the `stripe` SDK:
 * payment intents for top-ups, refunds, and webhook verification with the signing secret.
 */

const paymentIntentObject = z.object({
  id: z.string().min(1),
  object: z.literal('payment_intent'),
  amount: z.number().int().nonnegative(),
  amount_received: z.number().int().nonnegative().optional(),
  currency: z.string(),
  metadata: z.record(z.string(), z.string()).default({}),
});

const eventShape = z.object({
  id: z.string().min(1),
  type: z.string().min(1),
  data: z.object({ object: z.unknown() }),
});

/** Stripe-SDK options for SVC_PAYMENT_API_BASE, e.g. http://127.0.0.1:4010 for a local fake. */
export const stripeHostOptions = (base: string | undefined) => {
  if (!base) return {};
  const u = new URL(base);
  const protocol = u.protocol === 'http:' ? ('http' as const) : ('https' as const);
  return {
    host: u.hostname,
    port: u.port === '' ? (protocol === 'http' ? 80 : 443) : Number(u.port),
    protocol,
  };
};

const providerError = (what: string, err: unknown): ServiceError =>
  new ServiceError('upstream_error', `payment provider refused to ${what}: ${describeError(err)}`, {
    cause: err,
  });

/** Where Stripe.js confirms a payment intent (the browser's half of a top-up). */
const STRIPE_API = 'https://api.stripe.com';

/** The origin a browser confirms payments at: SVC_PAYMENT_API_BASE's, else Stripe's. */
export const browserPaymentOrigin = (apiBase: string | undefined): string =>
  apiBase ? new URL(apiBase).origin : STRIPE_API;

export class StripePayments implements PaymentProvider {
  readonly name = 'stripe';
  readonly browserApiBase: string;
  private readonly stripe: Stripe;

  constructor(
    apiKey: string,
    private readonly webhookSecret: string | undefined,
    readonly publishableKey: string | null,
    apiBase?: string,
  ) {
    this.browserApiBase = browserPaymentOrigin(apiBase);
    this.stripe = new Stripe(apiKey, {
      ...stripeHostOptions(apiBase),
      maxNetworkRetries: 2,
      timeout: 20_000,
      telemetry: false,
    });
  }

  async createPaymentIntent(input: { amountCents: number; workspaceId: string; topupId: string }) {
    try {
      const intent = await this.stripe.paymentIntents.create(
        {
          amount: input.amountCents,
          currency: 'usd',
          automatic_payment_methods: { enabled: true },
          metadata: { workspace_id: input.workspaceId, topup_id: input.topupId },
        },
        { idempotencyKey: `svc-topup-${input.topupId}` },
      );
      if (!intent.client_secret) throw new Error('the payment intent came back without client_secret');
      return { id: intent.id, clientSecret: intent.client_secret };
    } catch (err) {
      throw providerError('create a payment intent', err);
    }
  }

  async createRefund(input: {
    paymentIntentId: string;
    amountCents: number;
    workspaceId: string;
    refundId: string;
  }) {
    try {
      const refund = await this.stripe.refunds.create(
        {
          payment_intent: input.paymentIntentId,
          amount: input.amountCents,
          metadata: { workspace_id: input.workspaceId, refund_id: input.refundId },
        },
        // The provider refunds once per refund id, however often the caller retries.
        { idempotencyKey: `svc-refund-${input.workspaceId}-${input.refundId}` },
      );
      return { id: refund.id, status: refund.status ?? 'unknown' };
    } catch (err) {
      throw providerError('create a refund', err);
    }
  }

  verifyWebhook(rawBody: Buffer, signature: string | undefined): PaymentWebhookEvent {
    if (!this.webhookSecret)
      throw new ServiceError(
        'service_unavailable',
        'payment webhooks are not configured: the operator has not set SVC_PAYMENT_WEBHOOK_SECRET',
      );
    if (!signature) throw new ServiceError('bad_request', 'missing stripe-signature header');
    let verified: unknown;
    try {
      verified = Stripe.webhooks.constructEvent(rawBody, signature, this.webhookSecret);
    } catch (err) {
      throw new ServiceError('bad_request', `webhook signature rejected: ${describeError(err)}`);
    }
    const event = eventShape.safeParse(verified);
    if (!event.success) throw new ServiceError('bad_request', 'webhook payload is not an event');
    const intent = paymentIntentObject.safeParse(event.data.data.object);
    return {
      id: event.data.id,
      type: event.data.type,
      payload: verified,
      paymentIntent: intent.success
        ? {
            id: intent.data.id,
            amountReceivedCents: intent.data.amount_received ?? intent.data.amount,
            currency: intent.data.currency.toLowerCase(),
            metadata: intent.data.metadata,
          }
        : null,
    };
  }
}

/** The configured provider, or null when SVC_PAYMENT_API_KEY is unset (SPEC 5: billing inactive). */
export const paymentsFromConfig = (config: Config): PaymentProvider | null =>
  config.SVC_PAYMENT_API_KEY
    ? new StripePayments(
        config.SVC_PAYMENT_API_KEY,
        config.SVC_PAYMENT_WEBHOOK_SECRET,
        config.SVC_PAYMENT_PUBLISHABLE_KEY ?? null,
        config.SVC_PAYMENT_API_BASE,
      )
    : null;
