import type { EventStore, StoredEvent } from '../events/event-store.js';
import { VersionConflictError } from '../events/event-store.js';
import type { CommandContext, Decider, DomainEvent } from './decider.js';

export interface HandleResult<E, S> {
  events: E[];
  state: S;
  version: number;
  /** True when this command id had been handled before: nothing was appended this time. */
  replayed: boolean;
  /** Global position of the last event written (0 when nothing was written). */
  position: number;
}

const messageIdFor = (commandId: string, index: number) => `${commandId}:${index}`;

const toDomain = <E extends DomainEvent>(e: StoredEvent): E => ({ type: e.type, data: e.data }) as E;

/**
 * A pause of up to 2^attempt ms (at most 50), drawn at random, before a retry: writers that lost
 * the same race spread out instead of colliding again on the next read.
 */
const jitter = (attempt: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));

/**
 * Load the stream, decide, append with the loaded version as the expectation (STYLE.md rule 4).
 * Retries on a version conflict only when the caller opts in with `retries`, after a short random
 * pause; each retry reads the stream again and decides anew.
 */
export const handleCommand = async <C, E extends DomainEvent, S>(
  store: EventStore,
  decider: Decider<C, E, S>,
  streamId: string,
  command: C,
  context: CommandContext,
  options: { retries?: number } = {},
): Promise<HandleResult<E, S>> => {
  for (let attempt = 0; ; attempt++) {
    const { version, events: stored } = await store.readStream(streamId);
    const history = stored.map((e) => toDomain<E>(e));
    const state = history.reduce(decider.evolve, decider.initialState());

    const prefix = `${context.commandId}:`;
    const earlier = stored.filter((e) => e.messageId.startsWith(prefix));
    if (earlier.length > 0) {
      return {
        events: earlier.map((e) => toDomain<E>(e)),
        state,
        version,
        replayed: true,
        position: earlier.at(-1)!.globalPosition,
      };
    }

    const decided = decider.decide(command, state);
    if (decided.length === 0) return { events: [], state, version, replayed: false, position: 0 };
    try {
      const result = await store.append(
        streamId,
        version === 0 ? 'no_stream' : version,
        decided.map((e, i) => ({
          messageId: messageIdFor(context.commandId, i),
          type: e.type,
          data: e.data,
          metadata: {
            actor: context.actor,
            now: context.now,
            correlation_id: context.correlationId ?? context.commandId,
            causation_id: context.causationId ?? context.commandId,
            ...(context.tenantId ? { tenant_id: context.tenantId } : {}),
          },
        })),
      );
      return {
        events: decided,
        state: decided.reduce(decider.evolve, state),
        version: result.nextVersion,
        replayed: result.replayed,
        position: result.lastPosition,
      };
    } catch (err) {
      if (!(err instanceof VersionConflictError) || attempt >= (options.retries ?? 0)) throw err;
      await jitter(attempt);
    }
  }
};
