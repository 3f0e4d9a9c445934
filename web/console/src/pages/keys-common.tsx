/**
 * Small pieces shared by the keys and connections pages: a confirmation panel, an on/off toggle
 * button, the managers-only notice and the name rule the control plane applies to key names.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import { useScope } from '../scope';
import { Button, Notice, SelectField, TextField, useId } from '../ui';

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

/** A service API key as GET /api/api-keys lists it (SPEC 2.10). */
export interface ApiKey {
  api_key_id: string;
  project_id: string;
  org_id: string;
  workspace_id: string;
  name: string;
  prefix: string;
  tracing: boolean;
  created_at: string;
  revoked_at: string | null;
}

/**
 * The fields of every "create" form on the keys page (API key, developer token, trace-ingest key):
 * the project it belongs to, its name under the control plane's name rule, and the submit button.
 */
export const ProjectAndName = (props: {
  projectId: string;
  onProject: (id: string) => void;
  /** The empty choice: "Choose a project" where one is required, or what no project means. */
  noProject: string;
  projectRequired: boolean;
  name: string;
  onName: (v: string) => void;
  submit: string;
  busy: boolean;
}) => {
  const scope = useScope();
  const validName = isName(props.name);
  return (
    <>
      <SelectField
        label="Project"
        value={props.projectId}
        onValue={props.onProject}
        empty={props.noProject}
        options={scope.projects.map((p) => ({ value: p.project_id, label: p.name }))}
      />
      <TextField
        label="Name"
        value={props.name}
        onValue={props.onName}
        required
        maxLength={100}
        aria-invalid={props.name !== '' && !validName}
        hint={NAME_HINT}
      />
      <Button
        type="submit"
        kind="primary"
        busy={props.busy}
        disabled={(props.projectRequired && !props.projectId) || !validName}
      >
        {props.submit}
      </Button>
    </>
  );
};
