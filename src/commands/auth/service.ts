import type { EventStore } from '../../events/event-store.js';
import { newId } from '../../lib/ids.js';
import type { CommandContext, Decider, DomainEvent } from '../decider.js';
import { handleCommand } from '../handler.js';

/** Visible prefixes of the secrets the auth service mints. */
export const AUTH_SECRET_PREFIX = {
  developerToken: 'svc_dev_',
  invite: 'svc_inv_',
  registrationCode: 'svc_reg_',
} as const;

/**
 * Runs the auth aggregates' deciders: each command gets a fresh id, the caller's actor and the
 * clock's time, and the caller waits until the auth read model shows the change.
 */
export class AuthCommands {
  constructor(
    private readonly store: EventStore,
    /** Resolves once the auth read model includes `position`. */
    private readonly readYourWrites: (position: number) => Promise<void>,
    readonly clock: () => Date = () => new Date(),
  ) {}

  now(): Date {
    return this.clock();
  }

  async execute<C, E extends DomainEvent, S>(
    decider: Decider<C, E, S>,
    stream: string,
    command: C,
    options: { actor: string; tenantId?: string | null; retries?: number },
  ) {
    const context: CommandContext = {
      commandId: newId('cmd'),
      actor: options.actor,
      now: this.clock().toISOString(),
      ...(options.tenantId ? { tenantId: options.tenantId } : {}),
    };
    const result = await handleCommand(this.store, decider, stream, command, context, {
      retries: options.retries ?? 0,
    });
    if (result.position > 0) await this.readYourWrites(result.position);
    return result;
  }
}
