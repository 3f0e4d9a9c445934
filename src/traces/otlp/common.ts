import type { Attributes, AttributeValue } from '../model.js';

/** Malformed input; the message says what was wrong and at which byte offset (protobuf) or path (JSON). */
export class OtlpDecodeError extends Error {
  override readonly name = 'OtlpDecodeError';
}

/**
 * An export past a size bound (more spans than MAX_SPANS): refused whole, before it costs the memory
 * of every span it names (a few bytes of protobuf or JSON each). OTLP/HTTP answers it with 413.
 */
export class OtlpLimitError extends OtlpDecodeError {}

/** Spans one export may hold; BatchSpanProcessor sends 512, a collector's batch some thousands. */
export const MAX_SPANS = 65_536;

/** Array and key-value-list values nest; past this many enclosing messages the input is refused. */
export const MAX_DEPTH = 64;

/** Own-property assignment that also works for the key `__proto__`; the last duplicate key wins. */
export const setKey = (target: Attributes, key: string, value: AttributeValue): void => {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
};

// Protobuf wire types. 3 and 4 (groups) never occur in OTLP and are refused.
export const VARINT = 0;
export const I64 = 1;
export const LEN = 2;
export const I32 = 5;
