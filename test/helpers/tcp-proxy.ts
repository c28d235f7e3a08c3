/**
 * A TCP forwarder in front of a server (PostgreSQL in the fail-closed tests):
 * `stop()` closes the listener and cuts every open connection, so the store is
 * unreachable (connections refused) until `start()` listens again on the same
 * port.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        const upstream = createConnection({ host: targetHost, port: targetPort });
        sockets.add(client);
        sockets.add(upstream);
        // Each socket leaves the set on its own close only: a side half-closed by its peer
        // stays in it until it is gone, so stop() always destroys it (server.close() waits
        // for every connection, and hung on one forgotten early).
        // A side that closes lets the other flush what it has (a server's last error
        // message reaches the client); an error cuts both.
        upstream
          .on('end', () => client.end())
          .on('close', () => sockets.delete(upstream))
          .on('error', () => client.destroy());
        client
          .on('end', () => upstream.end())
          .on('close', () => sockets.delete(client))
          .on('error', () => upstream.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as { port: number }).port;
        server = s;
        resolve();
      });
    });

  const stop = async () => {
    const s = server;
    server = null;
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen();
  return {
    get port() {
      return port;
    },
    start: listen,
    stop,
    close: stop,
  };
}
