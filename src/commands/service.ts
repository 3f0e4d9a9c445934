import type { EventStore } from '../events/event-store.js';
import { ServiceError } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { CommandContext, Decider, DomainEvent } from './decider.js';
import { handleCommand } from './handler.js';

/** Who asked: `admin`, `user:<id>`, `cli` or `grpc:<service>`, recorded as the events' actor. */
export interface Actor {
  id: string;
}

/** What an aggregate's service runs on: the event store, read-your-writes and the clock. */
export interface CommandDeps {
  store: EventStore;
  /** Resolves once the read model the caller reads next includes `position`. */
  readYourWrites: (position: number) => Promise<void>;
  clock: () => Date;
}

/**
 * Version-conflict retries of a command whose decision reads only its own stream, which every
 * retry reads again: a setter (a tracing switch, a spend cap, a dimension assignment, a disallow
 * list, a platform key) or a change to a workspace's members and dimensions. A concurrent change to
 * the same aggregate is then absorbed instead of answered with 409 (STYLE.md rule 4: the handler
 * opts in). A command that hands back what it decided on (a rotated secret) or that carries a value
 * computed from an earlier read (discovery's merged metadata) does not opt in. Enough for dozens of
 * concurrent writers.
 */
export const CONFLICT_RETRIES = 30;

/**
 * Runs one command of an aggregate (STYLE.md rule 4 through handleCommand): a fresh command id, the
 * actor, the clock's time and the audit tenant become the events' metadata; then the caller waits
 * until the read model shows the change (read-your-writes for the HTTP caller). Without `retries`
 * a concurrent write to the same stream fails the command with VersionConflictError (409 at the
 * edges).
 */
export const runCommand = async <C, E extends DomainEvent, S>(
  deps: CommandDeps,
  decider: Decider<C, E, S>,
  stream: string,
  command: C,
  actor: Actor,
  tenantId?: string | null,
  options: { retries?: number } = {},
) => {
  const context: CommandContext = {
    commandId: newId('cmd'),
    actor: actor.id,
    now: deps.clock().toISOString(),
    ...(tenantId ? { tenantId } : {}),
  };
  const result = await handleCommand(deps.store, decider, stream, command, context, options);
  if (result.position > 0) await deps.readYourWrites(result.position);
  return result;
};

/** Characters of a minted secret shown in listings: its prefix and a few random ones. */
export const VISIBLE_PREFIX_LENGTH = 12;

const NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,99}$/u;

/** A display name of a workspace, org, project or key, trimmed; a 400 naming `param` otherwise. */
export const checkName = (name: unknown, param = 'name'): string => {
  if (typeof name !== 'string' || !NAME.test(name.trim())) {
    throw new ServiceError(
      'bad_request',
      `${param} must be 1 to 100 letters, digits, spaces, dots, dashes or underscores`,
      { param },
    );
  }
  return name.trim();
};
