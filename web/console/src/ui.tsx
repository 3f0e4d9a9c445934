/**
 * The console's small component kit: every control has a visible label, errors are announced
 * (role=alert), tables have captions and header cells, and nothing relies on colour alone.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';

let nextId = 0;
/**
 * A stable id unique in the document for a label's `for`. Preact's useId repeats ids across
 * siblings rendered at different times (the scope picker and a page gave P0-0 to both), so a
 * module counter is used instead.
 */
export const useId = (): string => useState(() => `f${++nextId}`)[0];

export const Page = (props: { title: string; children: ComponentChildren; actions?: ComponentChildren }) => {
  useEffect(() => {
    document.title = `${props.title} · Model Gateway console`;
  }, [props.title]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          {props.title}
        </h1>
        {props.actions ? <div class="page-actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
};

export const Section = (props: { title: string; children: ComponentChildren }) => (
  <section class="card">
    <h2>{props.title}</h2>
    {props.children}
  </section>
);

export const ErrorBox = (props: { error: unknown }) => {
  if (!props.error) return null;
  const e = props.error;
  const text =
    e instanceof ApiError
      ? `${e.message} (${e.status} ${e.code})`
      : e instanceof Error
        ? e.message
        : String(e);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
};

export const Notice = (props: { children: ComponentChildren }) => (
  <p class="notice" role="status">
    {props.children}
  </p>
);

export const Loading = () => (
  <p class="muted" role="status" aria-live="polite">
    Loading…
  </p>
);

type InputProps = Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'onInput' | 'value' | 'label'> & {
  label: string;
  value: string;
  onValue: (v: string) => void;
  type?: string;
  hint?: string;
  /** What is wrong with the value; shown under the field and announced with it. */
  error?: string | undefined;
};

export const TextField = ({ label, value, onValue, hint, error, ...rest }: InputProps) => {
  const id = useId();
  const described = [error ? `${id}-err` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        id={id}
        value={value}
        onInput={(e) => onValue((e.currentTarget as HTMLInputElement).value)}
        aria-describedby={described || undefined}
        {...(error ? { 'aria-invalid': true } : {})}
        {...rest}
      />
      {error ? (
        <small id={`${id}-err`} class="field-error">
          {error}
        </small>
      ) : null}
      {hint ? (
        <small id={`${id}-hint`} class="muted">
          {hint}
        </small>
      ) : null}
    </div>
  );
};

export const SelectField = (props: {
  label: string;
  value: string;
  onValue: (v: string) => void;
  options: readonly { value: string; label: string }[];
  /** Label of an empty first option ("any"); omitted when a value is required. */
  empty?: string;
  disabled?: boolean;
}) => {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        value={props.value}
        disabled={props.disabled}
        onChange={(e) => props.onValue((e.currentTarget as HTMLSelectElement).value)}
      >
        {props.empty !== undefined ? <option value="">{props.empty}</option> : null}
        {props.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    </div>
  );
};

export const CheckField = (props: { label: string; checked: boolean; onChecked: (v: boolean) => void }) => {
  const id = useId();
  return (
    <div class="field check">
      <input
        id={id}
        type="checkbox"
        checked={props.checked}
        onChange={(e) => props.onChecked((e.currentTarget as HTMLInputElement).checked)}
      />
      <label for={id}>{props.label}</label>
    </div>
  );
};

export const Button = (
  props: JSX.ButtonHTMLAttributes<HTMLButtonElement> & {
    kind?: 'primary' | 'danger' | 'plain';
    busy?: boolean;
  },
) => {
  const { kind = 'plain', busy, children, disabled, ...rest } = props;
  return (
    <button
      type="button"
      class={`btn btn-${kind}`}
      disabled={Boolean(busy) || Boolean(disabled)}
      aria-busy={busy}
      {...rest}
    >
      {children}
    </button>
  );
};

export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
  /** Right-aligned numbers. */
  numeric?: boolean;
}

export const Table = <T,>(props: {
  caption: string;
  columns: readonly Column<T>[];
  rows: readonly T[];
  rowKey: (row: T) => string;
  empty?: string;
}) => (
  <div class="table-wrap">
    <table>
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          {props.columns.map((c) => (
            <th key={c.label} scope="col" class={c.numeric ? 'num' : undefined}>
              {c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {props.rows.length === 0 ? (
          <tr>
            <td colSpan={props.columns.length} class="muted">
              {props.empty ?? 'Nothing to show.'}
            </td>
          </tr>
        ) : (
          props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map((c) => (
                <td key={c.label} class={c.numeric ? 'num' : undefined}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))
        )}
      </tbody>
    </table>
  </div>
);

/** Shows a secret once, with a copy button; the caller forgets it when the box closes. */
export const SecretOnce = (props: { label: string; secret: string; onClose: () => void }) => {
  const id = useId();
  const [copied, setCopied] = useState(false);
  return (
    <section class="secret" aria-labelledby={id}>
      <p id={id}>
        <strong>{props.label}</strong> It is shown only this once: copy it now.
      </p>
      <code class="secret-value" data-testid="secret-value">
        {props.secret}
      </code>
      <div class="row">
        <Button
          onClick={async () => {
            await navigator.clipboard?.writeText(props.secret).catch(() => undefined);
            setCopied(true);
          }}
        >
          {copied ? 'Copied' : 'Copy'}
        </Button>
        <Button onClick={props.onClose}>Done</Button>
      </div>
    </section>
  );
};

/** Loads `load()` when its deps change; `reload` runs it again. */
export const useLoad = <T,>(load: () => Promise<T>, deps: readonly unknown[]) => {
  const [state, setState] = useState<{ data: T | null; error: unknown; loading: boolean }>({
    data: null,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: null }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: unknown) => live && setState({ data: null, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
};

/** Runs a state-changing action with busy and error state for its form. */
export const useAction = () => {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
};

export const formatUsd = (v: string | number | null | undefined): string => {
  if (v === null || v === undefined || v === '') return '—';
  const s = String(v);
  // Money stays a decimal string (SPEC: exact money); only its display is shortened. A negative
  // amount reads "−$0.50", the sign before the currency.
  const negative = s.startsWith('-');
  const [int, frac = ''] = (negative ? s.slice(1) : s).split('.');
  return `${negative ? '−' : ''}$${int}${frac ? `.${frac.replace(/0+$/, '').padEnd(2, '0')}` : '.00'}`;
};

export const formatTime = (v: string | number | null | undefined): string => {
  if (v === null || v === undefined || v === '') return '—';
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? String(v) : d.toISOString().replace('T', ' ').slice(0, 19);
};
