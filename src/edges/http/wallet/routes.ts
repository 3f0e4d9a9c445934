import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { WalletCommands } from '../../../commands/wallet/service.js';
import { receivePaymentWebhook } from '../../../commands/wallet/webhooks.js';
import { ServiceError } from '../../../lib/errors.js';
import type { ControlPlaneReads } from '../../../projections/control-plane/reads.js';
import type { WalletReads } from '../../../projections/wallet/reads.js';
import { authenticatedApiFamily, publicApiFamily } from '../api-family.js';
import { parseBody } from '../body.js';
import {
  type AdminCredentials,
  actorOf,
  authenticate,
  type Principal,
  requireAdmin,
  requireWorkspace,
} from '../control-plane/auth.js';
import { routeDoc } from '../openapi.js';
import { ledgerCsv } from './csv.js';

/** Money travels as a decimal string (STYLE.md rule 9); the decider checks sign and form. */
const amount = z.string().min(1).max(40);
/**
 * SPEC 3: a refund is idempotent on its refund id, so the caller names every refund (a ticket or
 * credit-note number): a retry with the same id refunds once, and a second refund of the same
 * amount is a deliberate act with an id of its own. Money that leaves is not refunded on a guess.
 */
const refundId = z
  .string({
    error: (issue) =>
      issue.input === undefined
        ? 'is required: name this refund (e.g. its ticket number) so a retry cannot refund twice'
        : undefined,
  })
  .regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'letters, digits, dot, colon, dash or underscore, at most 100');

const grantBody = z.strictObject({
  amount_usd: amount,
  reason: z.string().trim().min(1).max(500),
  idempotency_key: z.string().min(1).max(200),
});
const topUpBody = z.strictObject({ amount_usd: amount });
const refundBody = z.strictObject({
  payment_intent_id: z.string().min(1).max(255),
  amount_usd: amount,
  refund_id: refundId,
});
const autoRefillBody = z.strictObject({
  enabled: z.boolean(),
  trigger_usd: amount,
  amount_usd: amount,
});

/** Grants, top-ups, refunds and auto-refill settings are a few short fields. */
const WALLET_BODY_LIMIT = 16 * 1024;
/**
 * A Stripe event carries a snapshot of one object: a payment intent or a refund is a few KB, and
 * the lists an event embeds hold at most 10 items, so the largest deliveries stay in the tens of
 * KB. 256 KiB leaves room for that; anything larger is not from the provider.
 */
const WEBHOOK_BODY_LIMIT = 256 * 1024;

export interface WalletHttpDeps {
  commands: WalletCommands;
  /** The wallet read model: balances, settings, the ledger export. */
  ledger: WalletReads;
  /** Sessions and workspaces, for who is calling and which workspace a read names. */
  controlPlane: ControlPlaneReads;
}

/**
 * Payment and wallet routes of SPEC 4.6: balance, top-ups and refunds (workspace manager), grants
 * (platform administrator), the ledger CSV export, auto-refill settings, the publishable key, and
 * the signed payment webhooks. A route that reads checks that its workspace exists; a route that
 * changes the wallet leaves that question to its command, which asks it once.
 */
export const registerWalletRoutes = async (
  app: FastifyInstance,
  deps: WalletHttpDeps,
  adminToken: string | AdminCredentials,
): Promise<void> => {
  // The manager and administrator routes: the caller is authenticated before the body is read.
  await app.register(async (scope) => {
    const family = authenticatedApiFamily(scope, {
      bodyLimit: WALLET_BODY_LIMIT,
      authenticate: (request) => authenticate(request, deps.controlPlane, adminToken, new Date()),
    });
    walletRoutes(scope, deps, family.caller);
  });

  // The signature covers the exact bytes, so this scope keeps bodies raw instead of parsing JSON.
  await app.register(async (scope) => {
    publicApiFamily(scope, { bodyLimit: WEBHOOK_BODY_LIMIT });
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post(
      '/api/payments/webhooks/:provider',
      routeDoc({ public: true, summary: 'A payment provider webhook (its own signature authenticates it)' }),
      async (request) => {
        const provider = (request.params as { provider: string }).provider;
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const signature = request.headers['stripe-signature'];
        if (Array.isArray(signature))
          throw new ServiceError('bad_request', 'one stripe-signature header expected');
        return receivePaymentWebhook(deps.commands, provider, raw, signature);
      },
    );
  });
};

const walletRoutes = (
  app: FastifyInstance,
  { commands: wallet, ledger, controlPlane: reads }: WalletHttpDeps,
  who: (request: FastifyRequest) => Principal,
): void => {
  const callerFor = (request: FastifyRequest, role: 'member' | 'manager' | 'admin') => {
    const p = who(request);
    const workspaceId = (request.params as { workspace_id: string }).workspace_id;
    if (role === 'admin') requireAdmin(p);
    else requireWorkspace(p, workspaceId, role);
    return { p, workspaceId };
  };
  const workspaceFor = async (request: FastifyRequest, role: 'member' | 'manager') => {
    const caller = callerFor(request, role);
    if (!(await reads.workspace(caller.workspaceId)))
      throw new ServiceError('not_found', 'workspace not found', { param: 'workspace_id' });
    return caller;
  };

  app.get('/api/payments/config', async () => {
    const payments = wallet.deps.payments;
    return {
      enabled: payments !== null,
      provider: payments?.name ?? null,
      publishable_key: payments?.publishableKey ?? null,
      // Where the console's browser step confirms a top-up's payment intent with the publishable key.
      api_base: payments?.publishableKey ? payments.browserApiBase : null,
      currency: 'USD',
    };
  });

  app.get('/api/workspaces/:workspace_id/wallet', async (request) => {
    const { workspaceId } = await workspaceFor(request, 'member');
    return {
      ...(await ledger.balance(workspaceId)),
      auto_refill: await ledger.autoRefill(workspaceId),
      payments_enabled: wallet.deps.payments !== null,
    };
  });

  app.post(
    '/api/workspaces/:workspace_id/wallet/grants',
    routeDoc({ body: grantBody }),
    async (request, reply) => {
      const { p, workspaceId } = callerFor(request, 'admin');
      const body = parseBody(grantBody, request.body);
      const r = await wallet.grant(actorOf(p), workspaceId, {
        amountUsd: body.amount_usd,
        reason: body.reason,
        idempotencyKey: body.idempotency_key,
        via: 'http',
      });
      return reply.code(r.created ? 201 : 200).send({ ...r.transaction, replayed: !r.created });
    },
  );

  app.post(
    '/api/workspaces/:workspace_id/wallet/topups',
    routeDoc({ body: topUpBody }),
    async (request, reply) => {
      const { p, workspaceId } = callerFor(request, 'manager');
      wallet.requirePayments();
      const body = parseBody(topUpBody, request.body);
      return reply.code(201).send(await wallet.createTopUp(actorOf(p), workspaceId, body.amount_usd));
    },
  );

  app.post(
    '/api/workspaces/:workspace_id/wallet/refunds',
    routeDoc({ body: refundBody }),
    async (request, reply) => {
      const { p, workspaceId } = callerFor(request, 'manager');
      wallet.requirePayments();
      const body = parseBody(refundBody, request.body);
      const r = await wallet.refund(actorOf(p), workspaceId, {
        paymentIntentId: body.payment_intent_id,
        amountUsd: body.amount_usd,
        refundId: body.refund_id,
      });
      return reply.code(r.created ? 201 : 200).send({ ...r.transaction, replayed: !r.created });
    },
  );

  app.get('/api/workspaces/:workspace_id/wallet/transactions/export.csv', async (request, reply) => {
    const { workspaceId } = await workspaceFor(request, 'member');
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="wallet-${workspaceId}-ledger.csv"`)
      .send(Readable.from(ledgerCsv(ledger, workspaceId)));
  });

  /**
   * The console's reads of the wallet (its wallet page; SPEC 4.6 lists the CSV export, these
   * are its JSON pages): the ledger newest first with the running balance, the active holds that
   * make up held_usd, and the top-ups with their status. Members read, as for the balance.
   */
  const pageQuery = (request: FastifyRequest, max: number) => {
    const q = request.query as Record<string, unknown>;
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > max)
      throw new ServiceError('bad_request', `limit must be an integer from 1 to ${max}`, { param: 'limit' });
    let before: number | null = null;
    if (q.before !== undefined) {
      before = typeof q.before === 'string' && /^[1-9]\d{0,15}$/.test(q.before) ? Number(q.before) : NaN;
      if (!Number.isSafeInteger(before))
        throw new ServiceError('bad_request', 'before must be a ledger position (a positive integer)', {
          param: 'before',
        });
    }
    return { limit, before };
  };
  app.get('/api/workspaces/:workspace_id/wallet/transactions', async (request) => {
    const { workspaceId } = await workspaceFor(request, 'member');
    const { limit, before } = pageQuery(request, 200);
    const page = await ledger.ledgerPageBefore(workspaceId, before, limit);
    return {
      workspace_id: workspaceId,
      data: page.data,
      has_more: page.has_more,
      next_before: page.has_more ? (page.data.at(-1)?.position ?? null) : null,
    };
  });
  app.get('/api/workspaces/:workspace_id/wallet/holds', async (request) => {
    const { workspaceId } = await workspaceFor(request, 'member');
    const { limit } = pageQuery(request, 200);
    return { workspace_id: workspaceId, ...(await ledger.activeHolds(workspaceId, limit)) };
  });
  app.get('/api/workspaces/:workspace_id/wallet/topups', async (request) => {
    const { workspaceId } = await workspaceFor(request, 'member');
    const { limit } = pageQuery(request, 100);
    return { workspace_id: workspaceId, data: await ledger.topUps(workspaceId, limit) };
  });

  app.get('/api/workspaces/:workspace_id/wallet/auto-refill', async (request) => {
    const { workspaceId } = await workspaceFor(request, 'member');
    return {
      workspace_id: workspaceId,
      settings: await ledger.autoRefill(workspaceId),
      acted_on: false,
    };
  });
  app.put(
    '/api/workspaces/:workspace_id/wallet/auto-refill',
    routeDoc({ body: autoRefillBody }),
    async (request) => {
      const { p, workspaceId } = callerFor(request, 'manager');
      const body = parseBody(autoRefillBody, request.body);
      const settings = await wallet.setAutoRefill(actorOf(p), workspaceId, {
        enabled: body.enabled,
        triggerUsd: body.trigger_usd,
        amountUsd: body.amount_usd,
      });
      // SPEC 8: stored, never acted on; the answer says so rather than implying a charge will happen.
      return { workspace_id: workspaceId, settings, acted_on: false };
    },
  );
};
