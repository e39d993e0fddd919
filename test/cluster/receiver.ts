import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One webhook request as the receiver took it. */
export interface Delivery {
  idempotencyKey: string;
  body: string;
  /** Epoch ms of its arrival. */
  at: number;
}

/** An HTTP server that answers 200 to every request and keeps each one with its `Idempotency-Key`. */
export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString("utf8")));
      req.on("end", () => {
        this.deliveries.push({ idempotencyKey: String(req.headers["idempotency-key"] ?? ""), body, at: Date.now() });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
