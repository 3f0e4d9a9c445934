export { audioShare, readCounter, readOptionalCount, UINT32_MAX } from './audio.js';
export { billingFailed, priceUsage } from './engine.js';
export { type EscrowEstimate, type EscrowLine, type EscrowShape, escrowEstimate } from './escrow-estimate.js';
export {
  type CompiledRate,
  type CompiledRateCard,
  checkRateRow,
  compileRateCard,
  findRate,
  isTokenMeter,
  RateCardError,
  selectRateCard,
} from './rate-card.js';
export * from './types.js';
