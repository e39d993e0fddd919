import { createConnection, createServer, type AddressInfo, type Socket } from "node:net";

export interface CutProxy {
  /** The port it listens on, 127.0.0.1. */
  port: number;
  /** Connections accepted and forwarded so far (cut ones included). */
  readonly connections: number;
  /** Resets every connection through it and every new one until `restore`: the target went away. */
  cut(): void;
  /** Forwards new connections again. */
  restore(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy from 127.0.0.1:<random> to `targetHost:targetPort`, for what a component does when
 * the network between it and a server fails: `cut` resets both ends of every connection (the
 * client sees ECONNRESET), and while cut it keeps its port but resets each connection it accepts,
 * so that the client's reconnects fail until `restore`.
 */
export async function startCutProxy(targetPort: number, targetHost = "127.0.0.1"): Promise<CutProxy> {
  const open = new Set<Socket>();
  let isCut = false;
  let connections = 0;
  const track = (socket: Socket): void => {
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    // A reset is what a cut is: the other end's error is the client's to see, not the proxy's.
    socket.on("error", () => undefined);
  };
  const server = createServer((client) => {
    connections++;
    if (isCut) {
      client.on("error", () => undefined);
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ host: targetHost, port: targetPort });
    track(client);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const both = (): void => {
      if (!client.destroyed) client.resetAndDestroy();
      if (!upstream.destroyed) upstream.resetAndDestroy();
    };
    client.on("close", both);
    upstream.on("close", both);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port: 0 }, resolve);
  });
  const cutAll = (): void => {
    for (const socket of open) if (!socket.destroyed) socket.resetAndDestroy();
    open.clear();
  };
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return connections;
    },
    cut() {
      isCut = true;
      cutAll();
    },
    restore() {
      isCut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        cutAll();
        server.close(() => resolve());
      }),
  };
}
