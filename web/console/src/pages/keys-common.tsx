/**
 * Small pieces shared by the keys and connections pages: a confirmation panel, an on/off toggle
 * button, the managers-only notice and the name rule the control plane applies to key names.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { Button, Notice, useId } from '../ui';

/** Names of keys, tokens and connections (src/commands/service.ts NAME): 1-100 letters, digits, space . _ - */
const NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,99}$/u;
export const isName = (v: string): boolean => NAME.test(v.trim());
export const NAME_HINT =
  '1 to 100 letters, digits, spaces, dots, dashes or underscores; starts with a letter or digit.';

/** Asks before an irreversible change; the confirm button takes focus, Escape cancels. */
export const Confirm = (props: {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
  danger?: boolean;
  confirmTestId?: string;
}) => {
  const id = useId();
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    ref.current?.querySelector<HTMLButtonElement>('button[data-confirm]')?.focus();
  }, []);
  return (
    <div
      ref={ref}
      class="confirm"
      role="alertdialog"
      aria-labelledby={`${id}-t`}
      aria-describedby={`${id}-d`}
      onKeyDown={(e) => {
        if (e.key === 'Escape') props.onCancel();
      }}
    >
      <p id={`${id}-t`}>
        <strong>{props.title}</strong>
      </p>
      <div id={`${id}-d`}>{props.children}</div>
      <div class="row">
        <Button
          data-confirm=""
          data-testid={props.confirmTestId}
          kind={props.danger ? 'danger' : 'primary'}
          busy={props.busy}
          onClick={props.onConfirm}
        >
          {props.confirmLabel}
        </Button>
        <Button onClick={props.onCancel} disabled={props.busy}>
          Cancel
        </Button>
      </div>
    </div>
  );
};

/** An on/off switch as a pressed/unpressed button: its label says what it controls and its state. */
export const Toggle = (props: {
  label: string;
  on: boolean;
  onToggle: (next: boolean) => void;
  disabled?: boolean;
  busy?: boolean;
}) => (
  <Button
    aria-pressed={props.on}
    // The visible state is part of the name (WCAG 2.5.3, label in name).
    aria-label={`${props.label}: ${props.on ? 'On' : 'Off'}`}
    title={props.disabled ? 'Only a workspace manager may change this' : `Turn ${props.on ? 'off' : 'on'}`}
    class={`btn btn-plain toggle ${props.on ? 'toggle-on' : ''}`}
    disabled={props.disabled}
    busy={props.busy}
    onClick={() => props.onToggle(!props.on)}
  >
    {props.on ? 'On' : 'Off'}
  </Button>
);

export const MembersRead = (props: { what: string }) => (
  <Notice>
    You are a member of this workspace: you can see {props.what}, but only a workspace manager may change
    them.
  </Notice>
);

/** A JSON date (ISO text) or null as shown in tables. */
export const when = (v: string | null | undefined): string =>
  v ? new Date(v).toISOString().replace('T', ' ').slice(0, 19) : '—';

/** An error's message, for lists of what did not work. */
export const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** The shared fields of ui.tsx under the names these pages use. */
export { CheckField as CheckInput, SelectField as SelectInput, TextField as InputField } from '../ui';
