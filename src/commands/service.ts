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
 * Runs one command of an aggregate (STYLE.md rule 4 through handleCommand): a fresh command id, the
 * actor, the clock's time and the audit tenant become the events' metadata; then the caller waits
 * until the read model shows the change (read-your-writes for the HTTP caller).
 */
export const runCommand = async <C, E extends DomainEvent, S>(
  deps: CommandDeps,
  decider: Decider<C, E, S>,
  stream: string,
  command: C,
  actor: Actor,
  tenantId?: string | null,
) => {
  const context: CommandContext = {
    commandId: newId('cmd'),
    actor: actor.id,
    now: deps.clock().toISOString(),
    ...(tenantId ? { tenantId } : {}),
  };
  const result = await handleCommand(deps.store, decider, stream, command, context);
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
