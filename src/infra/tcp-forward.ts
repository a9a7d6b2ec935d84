/**
 * A TCP forwarder from the node's address to a server of the stack on loopback: Temporal's dev
 * server runs its services on one address and advertises loopback to itself, so it cannot listen
 * on the node's address; Pods reach it through this. Every connection is piped both ways and
 * closed with its peer.
 */
import net from 'node:net';

export class TcpForward {
  private readonly sockets = new Set<net.Socket>();
  private constructor(private readonly server: net.Server) {}

  static start(listen: { host: string; port: number }, target: { host: string; port: number }): Promise<TcpForward> {
    const server = net.createServer();
    const forward = new TcpForward(server);
    server.on('connection', (client) => {
      const upstream = net.connect(target);
      for (const s of [client, upstream]) {
        forward.sockets.add(s);
        s.on('close', () => forward.sockets.delete(s));
        s.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(listen.port, listen.host, () => resolve(forward));
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
