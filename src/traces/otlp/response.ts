import { Buffer } from 'node:buffer';
import { LEN, VARINT } from './common.js';

// OTLP/HTTP answers: https://opentelemetry.io/docs/specs/otlp/#otlphttp-response

export interface ExportPartialSuccess {
  rejectedSpans: number;
  errorMessage: string;
}

export interface ExportResponseJson {
  /** rejectedSpans is an int64, hence a decimal string in OTLP/JSON. */
  partialSuccess?: { rejectedSpans: string; errorMessage: string };
}

/** Appends a varint; negatives are sign-extended to 64 bits as int32/int64 require. */
const pushVarint = (out: number[], value: number): void => {
  let v = BigInt.asUintN(64, BigInt(value));
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
};

/** Appends a string field unless empty (proto3 omits defaults). */
const pushString = (out: number[], field: number, text: string): void => {
  if (text === '') return;
  const bytes = Buffer.from(text, 'utf8');
  out.push((field << 3) | LEN);
  pushVarint(out, bytes.length);
  for (const b of bytes) out.push(b);
};

const checkRejected = (partial: ExportPartialSuccess): void => {
  if (!Number.isSafeInteger(partial.rejectedSpans) || partial.rejectedSpans < 0) {
    throw new RangeError(`rejectedSpans must be a non-negative integer, got ${partial.rejectedSpans}`);
  }
};

/**
 * ExportTraceServiceResponse { 1: partial_success ExportTracePartialSuccess { 1: rejected_spans
 * int64, 2: error_message } }. Full success is the empty message: zero bytes.
 */
export const encodeExportResponseProtobuf = (partial?: ExportPartialSuccess): Uint8Array => {
  if (partial === undefined) return new Uint8Array(0);
  checkRejected(partial);
  const inner: number[] = [];
  if (partial.rejectedSpans !== 0) {
    inner.push((1 << 3) | VARINT);
    pushVarint(inner, partial.rejectedSpans);
  }
  pushString(inner, 2, partial.errorMessage);
  // partial_success is written even when empty: its presence is what the client reads.
  const out: number[] = [(1 << 3) | LEN];
  pushVarint(out, inner.length);
  return Uint8Array.from(out.concat(inner));
};

export const exportResponseJson = (partial?: ExportPartialSuccess): ExportResponseJson => {
  if (partial === undefined) return {};
  checkRejected(partial);
  return {
    partialSuccess: { rejectedSpans: String(partial.rejectedSpans), errorMessage: partial.errorMessage },
  };
};

/** google.rpc.Status { 1: code int32, 2: message } (details, 3, not sent), for OTLP/HTTP failures. */
export const encodeStatusProtobuf = (code: number, message: string): Uint8Array => {
  if (!Number.isInteger(code) || code < -(2 ** 31) || code >= 2 ** 31) {
    throw new RangeError(`code must be an int32, got ${code}`);
  }
  const out: number[] = [];
  if (code !== 0) {
    out.push((1 << 3) | VARINT);
    pushVarint(out, code);
  }
  pushString(out, 2, message);
  return Uint8Array.from(out);
};

export const statusJson = (code: number, message: string): { code: number; message: string } => ({
  code,
  message,
});
