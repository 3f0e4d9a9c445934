/**
 * The write-side shape every aggregate follows (STYLE.md rules 1-2): pure functions, no I/O, no
 * clock. A rejection is a thrown ServiceError (a broken rule), everything else is events.
 */

export interface DomainEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

export interface Decider<C, E extends DomainEvent, S> {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
  decide: (command: C, state: S) => E[];
}

/** Who asked, when, and why: becomes each event's metadata. */
export interface CommandContext {
  /** Unique per command; the events' message ids derive from it, so a retried command is a no-op. */
  commandId: string;
  actor: string;
  now: string;
  correlationId?: string;
  causationId?: string;
  /** The tenant (workspace id) whose audit trail records this change; absent for platform changes. */
  tenantId?: string;
}

export const fold = <E extends DomainEvent, S>(
  decider: Pick<Decider<unknown, E, S>, 'initialState' | 'evolve'>,
  events: readonly E[],
): S => events.reduce(decider.evolve, decider.initialState());
