import * as grpc from '@grpc/grpc-js';
import { safeEqual } from '../../lib/crypto.js';
import { type ErrorCode, ServiceError } from '../../lib/errors.js';

const STATUS: Partial<Record<ErrorCode, grpc.status>> = {
  bad_request: grpc.status.INVALID_ARGUMENT,
  invalid_request_error: grpc.status.INVALID_ARGUMENT,
  unauthenticated: grpc.status.UNAUTHENTICATED,
  forbidden: grpc.status.PERMISSION_DENIED,
  not_found: grpc.status.NOT_FOUND,
  conflict: grpc.status.ALREADY_EXISTS,
  precondition_failed: grpc.status.FAILED_PRECONDITION,
  not_implemented: grpc.status.UNIMPLEMENTED,
  service_unavailable: grpc.status.UNAVAILABLE,
};

type Handler<Req, Res> = (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>;

/**
 * Wraps an async unary handler: checks the service token (`authorization: Bearer <token>`), maps
 * ServiceError codes to gRPC statuses, and never leaks an internal error's text.
 */
export const unary =
  <Req, Res>(serviceToken: string, handler: Handler<Req, Res>) =>
  (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>): void => {
    const header = call.metadata.get('authorization')[0];
    const token = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;
    if (!token || !safeEqual(token, serviceToken)) {
      callback({ code: grpc.status.UNAUTHENTICATED, details: 'missing or invalid service token' });
      return;
    }
    handler(call.request, call).then(
      (res) => callback(null, res),
      (err: unknown) => {
        if (err instanceof ServiceError)
          callback({ code: STATUS[err.code] ?? grpc.status.UNKNOWN, details: err.message });
        else callback({ code: grpc.status.INTERNAL, details: 'internal error' });
      },
    );
  };
