import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { HealthRegistry } from '../../lib/health.js';
import type { HealthServiceHandlers } from './generated/svc/health/v1/HealthService.js';
import type { PingResponse__Output } from './generated/svc/health/v1/PingResponse.js';
import { grpcHealth } from './health.js';

export const PROTO_ROOT = fileURLToPath(new URL('../../../proto/', import.meta.url));

/**
 * Loads a service definition from proto/ (package path such as `svc.health.v1.HealthService`). The
 * handlers and clients take their types from generated/ (`npm run proto:types`, the same options),
 * so a proto field renamed without them fails to compile.
 */
export const loadService = (file: string, qualifiedName: string): grpc.ServiceDefinition => {
  const definition = protoLoader.loadSync(file, {
    includeDirs: [PROTO_ROOT],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition);
  let node: unknown = loaded;
  for (const part of qualifiedName.split('.')) node = (node as Record<string, unknown>)[part];
  const service = (node as { service?: grpc.ServiceDefinition } | undefined)?.service;
  if (!service) throw new Error(`${qualifiedName} not found in ${file}`);
  return service;
};

/** A part of the process that serves gRPC services (a role): its name, and the services it adds. */
export interface GrpcMount {
  name: string;
  grpc?(server: grpc.Server): void;
}

/** A grpc.Server that keeps the fully qualified name of every service added to it. */
class NamedServicesServer extends grpc.Server {
  readonly services = new Set<string>();

  override addService(service: grpc.ServiceDefinition, implementation: grpc.UntypedServiceImplementation) {
    super.addService(service, implementation);
    // A method's path is `/<package>.<Service>/<Method>`.
    for (const method of Object.values(service)) this.services.add(method.path.split('/')[1] ?? '');
  }
}

export interface GrpcServer {
  server: grpc.Server;
  /** Health reports NOT_SERVING from now on (the process drains); call before shutting down. */
  drain(): void;
}

/**
 * The process's one gRPC server: its health services (SPEC 4.8 HealthService.Ping and the
 * standard grpc.health.v1.Health, neither behind the service token) and every role's services.
 */
export const createGrpcServer = (options: {
  health: HealthRegistry;
  roles: readonly GrpcMount[];
  version: string;
}): GrpcServer => {
  const server = new NamedServicesServer();
  server.addService(loadService('svc/health/v1/health.proto', 'svc.health.v1.HealthService'), {
    Ping: (_call, callback) => {
      options.health.report().then(
        (report) =>
          callback(null, {
            status: report.ok ? 'ok' : 'degraded',
            version: options.version,
            roles: options.roles.map((r) => r.name),
            dependencies: Object.entries(report.dependencies).map(([name, s]) => ({
              name,
              status: s.status,
              detail: s.detail ?? '',
            })),
          } satisfies PingResponse__Output),
        (err: Error) => callback({ code: grpc.status.INTERNAL, details: err.message }),
      );
    },
  } satisfies HealthServiceHandlers);
  const health = grpcHealth({ health: options.health, serves: (name) => server.services.has(name) });
  server.addService(
    loadService('grpc/health/v1/health.proto', 'grpc.health.v1.Health'),
    health.implementation,
  );
  for (const role of options.roles) role.grpc?.(server);
  return { server, drain: health.drain };
};

export const bindGrpc = (server: grpc.Server, host: string, port: number): Promise<number> =>
  new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    );
  });
