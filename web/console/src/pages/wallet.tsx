/**
 * Wallet (SPEC 2.9, 3, 4.6, 5, 8): the chosen workspace's balance and holds, its ledger
 * page by page with the CSV export, top-ups through the payment provider, auto-refill settings and
 * operator grants. Members read; top-ups and auto-refill need a workspace manager; grants need the
 * platform administrator (SPEC 5). The server enforces all of it; the page only explains.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, download } from '../api';
import { useScope } from '../scope';
import {
  Button,
  CheckField,
  ErrorBox,
  formatTime,
  formatUsd,
  Loading,
  Notice,
  Page,
  Section,
  Table,
  TextField,
  useAction,
  useLoad,
} from '../ui';

import './control-pages.css';

interface AutoRefill {
  enabled: boolean;
  trigger_usd: string;
  amount_usd: string;
  updated_by: string;
  updated_at: string;
}
interface Wallet {
  workspace_id: string;
  currency: 'USD';
  balance_usd: string;
  held_usd: string;
  available_usd: string;
  funded: boolean;
  auto_refill: AutoRefill | null;
  payments_enabled: boolean;
}
interface LedgerLine {
  position: number;
  occurred_at: string;
  kind: 'topup' | 'grant' | 'refund' | 'charge';
  id: string;
  amount_usd: string;
  balance_usd: string;
  actor: string | null;
  reference: string | null;
  reason: string | null;
}
interface LedgerPage {
  data: LedgerLine[];
  has_more: boolean;
  next_before: number | null;
}
interface Hold {
  hold_id: string;
  amount_usd: string;
  created_at: string;
  expires_at: string;
}
interface TopUpRow {
  topup_id: string;
  provider: string;
  payment_intent_id: string;
  amount_usd: string;
  status: 'pending' | 'settled';
  created_at: string;
  settled_at: string | null;
}
interface PaymentsConfig {
  enabled: boolean;
  provider: string | null;
  publishable_key: string | null;
  /** Where the browser confirms a payment intent with the publishable key (null: no browser step). */
  api_base: string | null;
  currency: string;
}

/**
 * The browser's half of a top-up, on the payment provider's wire (as Stripe.js sends it): confirm
 * the payment intent with the publishable key, its client secret and a payment method. The secret
 * key never leaves the server; the wallet is credited when the provider's signed webhook arrives.
 */
const confirmPayment = async (
  cfg: PaymentsConfig,
  intent: { id: string; clientSecret: string },
  paymentMethod: string,
): Promise<void> => {
  const res = await fetch(`${cfg.api_base}/v1/payment_intents/${encodeURIComponent(intent.id)}/confirm`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      key: cfg.publishable_key ?? '',
      client_secret: intent.clientSecret,
      payment_method: paymentMethod,
    }),
    credentials: 'omit',
  });
  if (res.ok) return;
  const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
  throw new Error(`the payment provider refused the payment: ${body?.error?.message ?? res.status}`);
};

const PayStep = (props: { cfg: PaymentsConfig; intent: { id: string; clientSecret: string } }) => {
  const [method, setMethod] = useState(
    props.cfg.publishable_key?.startsWith('pk_test_') ? 'pm_card_visa' : '',
  );
  const [sent, setSent] = useState(false);
  const pay = useAction();
  const submit = async (e: Event) => {
    e.preventDefault();
    const ok = await pay.run(async () => {
      await confirmPayment(props.cfg, props.intent, method.trim());
      return true;
    });
    if (ok) setSent(true);
  };
  if (sent)
    return (
      <p role="status">
        Payment confirmed with the provider; the wallet is credited when its webhook arrives (checked below).
      </p>
    );
  return (
    <form class="row" onSubmit={submit} aria-label="Pay">
      <TextField
        label="Payment method"
        value={method}
        onValue={setMethod}
        required
        pattern="pm_[A-Za-z0-9_]+"
        hint="A payment method id of your provider account (pm_card_visa in test mode)."
      />
      <Button
        type="submit"
        kind="primary"
        busy={pay.busy}
        disabled={!/^pm_[A-Za-z0-9_]+$/.test(method.trim())}
        data-testid="topup-pay"
      >
        Pay
      </Button>
      <ErrorBox error={pay.error} />
    </form>
  );
};
interface TopUpCreated {
  topup_id: string;
  payment_intent_id: string;
  client_secret: string;
  amount_usd: string;
  status: 'pending';
  publishable_key: string | null;
}

const LEDGER_PAGE = 25;
/** A decimal USD amount as the wallet routes take it: digits, optionally a point and decimals. */
const USD_PATTERN = '\\d{1,12}(\\.\\d{1,18})?';
const isUsd = (v: string) => new RegExp(`^${USD_PATTERN}$`).test(v.trim());
const TOPUP_PATTERN = '\\d{1,6}(\\.\\d{1,2})?';
const isTopUpAmount = (v: string) => {
  if (!new RegExp(`^${TOPUP_PATTERN}$`).test(v.trim())) return false;
  const [int = '0', frac = ''] = v.trim().split('.');
  const cents = Number(int) * 100 + Number(frac.padEnd(2, '0'));
  return cents >= 50 && cents <= 99_999_999;
};

const KIND_LABEL: Record<LedgerLine['kind'], string> = {
  topup: 'Top-up',
  grant: 'Grant',
  refund: 'Refund',
  charge: 'Charge',
};

const Balance = (props: { wallet: Wallet }) => {
  const w = props.wallet;
  return (
    <>
      <dl class="figures">
        <div>
          <dt>Balance</dt>
          <dd data-testid="wallet-balance">{formatUsd(w.balance_usd)}</dd>
        </div>
        <div>
          <dt>Held for requests in flight</dt>
          <dd data-testid="wallet-held">{formatUsd(w.held_usd)}</dd>
        </div>
        <div>
          <dt>Available</dt>
          <dd data-testid="wallet-available">{formatUsd(w.available_usd)}</dd>
        </div>
      </dl>
      <p class="muted">
        Exact amounts: balance {w.balance_usd} USD, held {w.held_usd} USD, available {w.available_usd} USD.
      </p>
      {w.funded ? null : (
        <Notice>
          This wallet has never been credited: requests on platform keys are refused (no_wallet) until a
          top-up or grant arrives. Traffic on your own provider connections (BYOK) is not affected.
        </Notice>
      )}
    </>
  );
};

const Holds = (props: { workspaceId: string; tick: number }) => {
  const holds = useLoad(
    () =>
      api.get<{ data: Hold[]; has_more: boolean }>(`/api/workspaces/${props.workspaceId}/wallet/holds`, {
        limit: 50,
      }),
    [props.workspaceId, props.tick],
  );
  if (holds.loading && !holds.data) return <Loading />;
  if (holds.error) return <ErrorBox error={holds.error} />;
  const data = holds.data;
  if (!data) return null;
  return (
    <>
      <Table
        caption="Active holds (escrow for wallet-funded requests in flight; each is settled by its charge or released when it expires)"
        columns={[
          { label: 'Hold (request id)', cell: (h: Hold) => <code>{h.hold_id}</code> },
          { label: 'Amount', cell: (h) => formatUsd(h.amount_usd), numeric: true },
          { label: 'Placed', cell: (h) => formatTime(h.created_at) },
          { label: 'Expires', cell: (h) => formatTime(h.expires_at) },
        ]}
        rows={data.data}
        rowKey={(h) => h.hold_id}
        empty="No funds are held right now."
      />
      {data.has_more ? <p class="muted">Showing the 50 newest holds.</p> : null}
    </>
  );
};

const Ledger = (props: { workspaceId: string; tick: number }) => {
  // A stack of cursors: [] is the newest page; each Older pushes the cursor of the next page.
  const [cursors, setCursors] = useState<number[]>([]);
  useEffect(() => setCursors([]), [props.workspaceId]);
  const before = cursors.at(-1);
  const page = useLoad(
    () =>
      api.get<LedgerPage>(`/api/workspaces/${props.workspaceId}/wallet/transactions`, {
        limit: LEDGER_PAGE,
        before,
      }),
    [props.workspaceId, before, props.tick],
  );
  const exporting = useAction();
  const exportCsv = () =>
    exporting.run(() =>
      download(
        `/api/workspaces/${encodeURIComponent(props.workspaceId)}/wallet/transactions/export.csv`,
        `wallet-${props.workspaceId}-ledger.csv`,
      ),
    );
  return (
    <>
      <div class="row">
        <Button data-testid="ledger-export" onClick={exportCsv} busy={exporting.busy}>
          Export CSV
        </Button>
        <span class="muted">The whole ledger, oldest first, with the running balance after each line.</span>
      </div>
      <ErrorBox error={exporting.error} />
      {page.loading && !page.data ? <Loading /> : null}
      <ErrorBox error={page.error} />
      {page.data ? (
        <>
          <Table
            caption={`Ledger, newest first (page ${cursors.length + 1})`}
            columns={[
              { label: 'Time (UTC)', cell: (l: LedgerLine) => formatTime(l.occurred_at) },
              { label: 'Type', cell: (l) => KIND_LABEL[l.kind] },
              {
                label: 'Amount',
                cell: (l) => <span title={`${l.amount_usd} USD`}>{formatUsd(l.amount_usd)}</span>,
                numeric: true,
              },
              {
                label: 'Balance after',
                cell: (l) => <span title={`${l.balance_usd} USD`}>{formatUsd(l.balance_usd)}</span>,
                numeric: true,
              },
              { label: 'Id', cell: (l) => <code>{l.id}</code> },
              { label: 'Reference or billing status', cell: (l) => l.reference ?? '—' },
              { label: 'Reason', cell: (l) => l.reason ?? '—' },
              { label: 'Actor', cell: (l) => l.actor ?? '—' },
            ]}
            rows={page.data.data}
            rowKey={(l) => `${l.kind}:${l.id}`}
            empty={
              cursors.length === 0
                ? 'The ledger is empty: no top-up, grant, refund or charge yet.'
                : 'No older lines.'
            }
          />
          <nav class="row" aria-label="Ledger pages">
            <Button disabled={cursors.length === 0} onClick={() => setCursors([])}>
              Newest
            </Button>
            <Button disabled={cursors.length === 0} onClick={() => setCursors((c) => c.slice(0, -1))}>
              Newer
            </Button>
            <Button
              disabled={!page.data.has_more || page.data.next_before === null}
              onClick={() => {
                const next = page.data?.next_before;
                if (next !== null && next !== undefined) setCursors((c) => [...c, next]);
              }}
            >
              Older
            </Button>
          </nav>
        </>
      ) : null}
    </>
  );
};

const TopUp = (props: { workspaceId: string; canManage: boolean; onCredited: () => void }) => {
  const config = useLoad(() => api.get<PaymentsConfig>('/api/payments/config'), []);
  const [amount, setAmount] = useState('25.00');
  const [created, setCreated] = useState<TopUpCreated | null>(null);
  // The client secret is shown once in its box and dropped when the box closes.
  const [secret, setSecret] = useState<string | null>(null);
  const [pollTick, setPollTick] = useState(0);
  const create = useAction();
  const topups = useLoad(
    () => api.get<{ data: TopUpRow[] }>(`/api/workspaces/${props.workspaceId}/wallet/topups`, { limit: 10 }),
    [props.workspaceId, pollTick],
  );
  const watched = created
    ? topups.data?.data.find((t) => t.payment_intent_id === created.payment_intent_id)
    : undefined;
  const settled = watched?.status === 'settled';

  // While a top-up made here is pending, look again every 3 s (for up to 10 minutes).
  useEffect(() => {
    if (!created || settled) return;
    const started = Date.now();
    const timer = setInterval(() => {
      if (Date.now() - started > 600_000) clearInterval(timer);
      else setPollTick((t) => t + 1);
    }, 3_000);
    return () => clearInterval(timer);
  }, [created, settled]);
  useEffect(() => {
    if (settled) props.onCredited();
  }, [settled]);

  if (config.loading) return <Loading />;
  if (config.error) return <ErrorBox error={config.error} />;
  const cfg = config.data;
  const valid = isTopUpAmount(amount);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!valid) return;
    const r = await create.run(() =>
      api.post<TopUpCreated>(`/api/workspaces/${props.workspaceId}/wallet/topups`, {
        amount_usd: amount.trim(),
      }),
    );
    if (r) {
      setSecret(r.client_secret);
      setCreated({ ...r, client_secret: '' });
      setPollTick((t) => t + 1);
    }
  };
  return (
    <>
      {!cfg?.enabled ? (
        <Notice>
          Top-ups are disabled: the operator has not configured a payment provider (SVC_PAYMENT_API_KEY).
          Grants still credit the wallet, and traffic on your own provider connections is unaffected.
        </Notice>
      ) : (
        <>
          <p class="muted">
            Payment provider: {cfg.provider ?? 'unknown'}; publishable key{' '}
            <code>{cfg.publishable_key ?? 'not set'}</code>. A top-up creates a payment intent here, you
            confirm it with the provider from this page, and the wallet is credited when the provider's signed
            webhook reports the payment succeeded.
          </p>
          {props.canManage ? null : (
            <Notice>Only a workspace manager may top up this wallet (SPEC 5); you are a member.</Notice>
          )}
          <form class="row" onSubmit={submit}>
            <TextField
              label="Amount (USD)"
              value={amount}
              onValue={setAmount}
              inputMode="decimal"
              required
              pattern={TOPUP_PATTERN}
              disabled={!props.canManage}
              aria-invalid={!valid}
              hint="From 0.50 to 999999.99, at most two decimals."
            />
            <Button type="submit" kind="primary" busy={create.busy} disabled={!props.canManage || !valid}>
              Create top-up
            </Button>
          </form>
          <ErrorBox error={create.error} />
        </>
      )}
      {created ? (
        <div class="card inner" aria-live="polite">
          <h3>Top-up {formatUsd(created.amount_usd)}</h3>
          <p>
            Payment intent <code>{created.payment_intent_id}</code>:{' '}
            {settled ? (
              <strong class="ok">paid and credited to the wallet</strong>
            ) : (
              <strong>waiting for the payment (status {watched?.status ?? created.status})</strong>
            )}
          </p>
          {secret && cfg?.api_base ? (
            <PayStep cfg={cfg} intent={{ id: created.payment_intent_id, clientSecret: secret }} />
          ) : null}
          {settled ? null : (
            <p class="muted">
              The payment is confirmed with the provider from this page (its publishable key and this top-up's
              client secret; no provider script is loaded). This page checks the top-up's status every few
              seconds and shows the credit as soon as the provider's webhook arrives.
            </p>
          )}
          <Button onClick={() => setPollTick((t) => t + 1)}>Check status now</Button>
        </div>
      ) : null}
      <ErrorBox error={topups.error} />
      {topups.data ? (
        <Table
          caption="Recent top-ups"
          columns={[
            { label: 'Created', cell: (t: TopUpRow) => formatTime(t.created_at) },
            { label: 'Amount', cell: (t) => formatUsd(t.amount_usd), numeric: true },
            {
              label: 'Status',
              cell: (t) =>
                t.status === 'settled' ? (
                  <span class="badge badge-ok">credited</span>
                ) : (
                  <span class="badge">pending</span>
                ),
            },
            { label: 'Payment intent', cell: (t) => <code>{t.payment_intent_id}</code> },
            { label: 'Credited', cell: (t) => formatTime(t.settled_at) },
          ]}
          rows={topups.data.data}
          rowKey={(t) => t.topup_id}
          empty="No top-ups yet."
        />
      ) : null}
    </>
  );
};

const AutoRefillForm = (props: {
  workspaceId: string;
  current: AutoRefill | null;
  canManage: boolean;
  onSaved: () => void;
}) => {
  const [enabled, setEnabled] = useState(props.current?.enabled ?? false);
  const [trigger, setTrigger] = useState(props.current?.trigger_usd ?? '10');
  const [amount, setAmount] = useState(props.current?.amount_usd ?? '50');
  const [saved, setSaved] = useState(false);
  const save = useAction();
  useEffect(() => {
    setEnabled(props.current?.enabled ?? false);
    setTrigger(props.current?.trigger_usd ?? '10');
    setAmount(props.current?.amount_usd ?? '50');
  }, [props.workspaceId, props.current?.updated_at]);
  const valid = isUsd(trigger) && isUsd(amount);
  const submit = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    const r = await save.run(() =>
      api.put(`/api/workspaces/${props.workspaceId}/wallet/auto-refill`, {
        enabled,
        trigger_usd: trigger.trim(),
        amount_usd: amount.trim(),
      }),
    );
    if (r !== undefined) {
      setSaved(true);
      props.onSaved();
    }
  };
  return (
    <>
      <Notice>
        Auto-refill settings are stored but not acted on: the service never charges a saved payment method by
        itself (SPEC 8). Top up by hand when the balance runs low.
      </Notice>
      {props.current ? (
        <p class="muted">
          Last changed {formatTime(props.current.updated_at)} by {props.current.updated_by}.
        </p>
      ) : (
        <p class="muted">No auto-refill settings have been saved for this workspace.</p>
      )}
      {props.canManage ? null : <Notice>Only a workspace manager may change these settings.</Notice>}
      <form onSubmit={submit}>
        <fieldset class="plain" disabled={!props.canManage}>
          <legend class="sr-only">Auto-refill</legend>
          <div class="row">
            <CheckField label="Enabled" checked={enabled} onChecked={setEnabled} />
            <TextField
              label="When available falls below (USD)"
              value={trigger}
              onValue={setTrigger}
              inputMode="decimal"
              required
              pattern={USD_PATTERN}
            />
            <TextField
              label="Refill amount (USD)"
              value={amount}
              onValue={setAmount}
              inputMode="decimal"
              required
              pattern={USD_PATTERN}
            />
            <Button type="submit" kind="primary" busy={save.busy} disabled={!valid}>
              Save settings
            </Button>
          </div>
        </fieldset>
      </form>
      <ErrorBox error={save.error} />
      {saved ? (
        <p class="ok" role="status">
          Saved (stored only; nothing will be charged).
        </p>
      ) : null}
    </>
  );
};

const GrantForm = (props: { workspaceId: string; isAdmin: boolean; onGranted: () => void }) => {
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  const [key, setKey] = useState<string>(() => crypto.randomUUID());
  const [done, setDone] = useState<string | null>(null);
  const grant = useAction();
  const valid = isUsd(amount) && /[1-9]/.test(amount) && reason.trim() !== '' && key.trim() !== '';
  const submit = async (e: Event) => {
    e.preventDefault();
    setDone(null);
    const r = await grant.run(() =>
      api.post<{ transaction_id: string; amount_usd: string; replayed: boolean }>(
        `/api/workspaces/${props.workspaceId}/wallet/grants`,
        { amount_usd: amount.trim(), reason: reason.trim(), idempotency_key: key.trim() },
      ),
    );
    if (r) {
      setDone(
        r.replayed
          ? `This idempotency key was used before: grant ${r.transaction_id} was not made twice.`
          : `Granted ${formatUsd(r.amount_usd)} (${r.transaction_id}).`,
      );
      setAmount('');
      setReason('');
      setKey(crypto.randomUUID());
      props.onGranted();
    }
  };
  return (
    <>
      {props.isAdmin ? null : (
        <Notice>
          Grants are made by the platform administrator only (SPEC 5: operator grants, audited with the
          administrator as actor). Your session is not an administrator's (the operator lists them in
          SVC_PLATFORM_ADMINS), so the form is disabled.
        </Notice>
      )}
      <form onSubmit={submit}>
        <fieldset class="plain" disabled={!props.isAdmin}>
          <legend class="sr-only">Grant</legend>
          <div class="row">
            <TextField
              label="Amount (USD)"
              value={amount}
              onValue={setAmount}
              inputMode="decimal"
              required
              pattern={USD_PATTERN}
              hint="A positive decimal."
            />
            <TextField label="Reason" value={reason} onValue={setReason} required maxLength={500} />
            <TextField
              label="Idempotency key"
              value={key}
              onValue={setKey}
              required
              maxLength={200}
              hint="A retry with the same key grants once."
            />
            <Button type="submit" kind="primary" busy={grant.busy} disabled={!valid}>
              Grant credit
            </Button>
          </div>
        </fieldset>
      </form>
      <ErrorBox error={grant.error} />
      {done ? <p role="status">{done}</p> : null}
    </>
  );
};

export const WalletPage = () => {
  const scope = useScope();
  const ws = scope.workspaceId;
  const [tick, setTick] = useState(0);
  const refresh = () => setTick((t) => t + 1);
  const wallet = useLoad(
    () => (ws ? api.get<Wallet>(`/api/workspaces/${encodeURIComponent(ws)}/wallet`) : Promise.resolve(null)),
    [ws, tick],
  );
  const canManage = scope.role === 'manager';
  if (!ws) return <Page title="Wallet">{<Notice>Choose a workspace to see its wallet.</Notice>}</Page>;
  return (
    <Page title="Wallet" actions={<Button onClick={refresh}>Refresh</Button>}>
      <Section title="Balance">
        {wallet.loading && !wallet.data ? <Loading /> : null}
        <ErrorBox error={wallet.error} />
        {wallet.data ? <Balance wallet={wallet.data} /> : null}
        <Holds workspaceId={ws} tick={tick} />
      </Section>
      <Section title="Ledger">
        <Ledger workspaceId={ws} tick={tick} />
      </Section>
      <Section title="Top up">
        <TopUp key={ws} workspaceId={ws} canManage={canManage} onCredited={refresh} />
      </Section>
      <Section title="Auto-refill">
        {wallet.data ? (
          <AutoRefillForm
            workspaceId={ws}
            current={wallet.data.auto_refill}
            canManage={canManage}
            onSaved={refresh}
          />
        ) : wallet.error ? (
          <p class="muted">The settings could not be read (see the error above).</p>
        ) : (
          <Loading />
        )}
      </Section>
      <Section title="Grants">
        <GrantForm key={ws} workspaceId={ws} isAdmin={scope.session.admin} onGranted={refresh} />
      </Section>
    </Page>
  );
};
