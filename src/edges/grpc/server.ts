import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { HealthRegistry } from '../../lib/health.js';

export const PROTO_ROOT = fileURLToPath(new URL('../../../proto/', import.meta.url));

/** Loads a service definition from proto/ (package path such as `svc.health.v1.HealthService`). */
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

/** What the server asks of a role (src/roles/role.ts): its name, and its services if it has any. */
export interface GrpcMount {
  name: string;
  grpc?(server: grpc.Server): void;
}

export const createGrpcServer = (options: {
  health: HealthRegistry;
  roles: readonly GrpcMount[];
  version: string;
}): grpc.Server => {
  const server = new grpc.Server();
  server.addService(loadService('svc/health/v1/health.proto', 'svc.health.v1.HealthService'), {
    Ping: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
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
          }),
        (err: Error) => callback({ code: grpc.status.INTERNAL, details: err.message }),
      );
    },
  });
  for (const role of options.roles) role.grpc?.(server);
  return server;
};

export const bindGrpc = (server: grpc.Server, host: string, port: number): Promise<number> =>
  new Promise((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    );
  });
