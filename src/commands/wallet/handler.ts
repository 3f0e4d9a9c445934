import type { EventStore, StreamAppend } from '../../events/event-store.js';
import { walletDecider } from './decider.js';
import { type WalletCommand, type WalletEvent, walletStream } from './events.js';

export interface WalletCommandContext {
  /**
   * Deterministic per money movement (`wallet:grant:<ws>:<key>`, `wallet:charge:<request_id>`, ...):
   * the events' message ids derive from it, so a retried or redelivered command appends nothing.
   */
  commandId: string;
  actor: string;
  /** The decision time, supplied by the caller (deciders read no clock). */
  now: string;
  /** The audit tenant; absent for movements no workspace can be named for. */
  tenantId?: string;
}

export interface WalletCommandResult {
  events: WalletEvent[];
  /** Global position of the last event, written now or found from the first time. */
  position: number;
  replayed: boolean;
}

/**
 * A wallet command decided, and the append that records it: the workspace's stream with expected
 * version `any`, message ids derived from the command id. `runWalletCommand` appends it alone;
 * settlement appends many in one transaction.
 */
export const decideWalletCommand = (
  workspaceId: string,
  command: WalletCommand,
  ctx: WalletCommandContext,
): { events: WalletEvent[]; append: StreamAppend } => {
  const events = walletDecider.decide(command, walletDecider.initialState());
  return {
    events,
    append: {
      streamId: walletStream(workspaceId),
      expected: 'any',
      events: events.map((e, i) => ({
        messageId: `${ctx.commandId}:${i}`,
        type: e.type,
        data: e.data,
        metadata: {
          actor: ctx.actor,
          now: ctx.now,
          correlation_id: ctx.commandId,
          causation_id: ctx.commandId,
          ...(ctx.tenantId ? { tenant_id: ctx.tenantId } : {}),
        },
      })),
    },
  };
};

/**
 * Decides and appends with expected version `any` (STYLE.md rule 4 states it; this is the one
 * aggregate that opts out of optimistic concurrency). A wallet stream takes one append per settled
 * request, so an expected-version check would make concurrent settlements of one workspace conflict
 * and retry without protecting anything: no wallet decision depends on the folded balance (the
 * escrow hold guards funds) and each movement is made idempotent by its message ids.
 */
export const runWalletCommand = async (
  store: EventStore,
  workspaceId: string,
  command: WalletCommand,
  ctx: WalletCommandContext,
): Promise<WalletCommandResult> => {
  const { events, append } = decideWalletCommand(workspaceId, command, ctx);
  const result = await store.append(append.streamId, append.expected, append.events);
  return { events, position: result.lastPosition, replayed: result.replayed };
};
