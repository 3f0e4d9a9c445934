/**
 * OTLP trace export decoding (SPEC 4.3): ExportTraceServiceRequest from protobuf (a hand-written
 * wire reader; protobufjs is too slow and too lenient) or from OTLP/JSON, into the model of
 * ./model.ts; plus the OTLP/HTTP answers. Pure: no I/O, no clock. One
 * module per wire: otlp/protobuf.ts, otlp/json.ts, otlp/response.ts.
 *
 * Protobuf field numbers are those of opentelemetry/proto (common/v1, resource/v1, trace/v1,
 * collector/trace/v1) and google/rpc/status.proto.
 */
export { MAX_SPANS, OtlpDecodeError, OtlpLimitError } from './otlp/common.js';
export { decodeOtlpJson } from './otlp/json.js';
export { decodeOtlpProtobuf } from './otlp/protobuf.js';
export {
  type ExportPartialSuccess,
  type ExportResponseJson,
  encodeExportResponseProtobuf,
  encodeStatusProtobuf,
  exportResponseJson,
  statusJson,
} from './otlp/response.js';
