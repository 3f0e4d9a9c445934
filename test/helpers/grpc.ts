import * as grpc from '@grpc/grpc-js';
import { loadService } from '../../src/edges/grpc/server.js';

/** A tiny promise-based client for one service in proto/, for tests over a real socket. */
export const grpcClient = (port: number, file: string, service: string, token?: string) => {
  const Ctor = grpc.makeGenericClientConstructor(loadService(file, service), service.split('.').at(-1)!);
  const client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client &
    Record<
      string,
      (req: object, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void
    >;
  const call = <T>(method: string, request: object): Promise<T> =>
    new Promise((resolve, reject) => {
      const md = new grpc.Metadata();
      if (token) md.set('authorization', `Bearer ${token}`);
      client[method]!.call(client, request, md, (err, res) => (err ? reject(err) : resolve(res as T)));
    });
  return { call, close: () => client.close() };
};
