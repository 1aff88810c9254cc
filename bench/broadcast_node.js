// The Node baseline for bench/fanout.py: the same least work as bench/broadcast_baseline.py,
// with the `ws` package (installed by bench/fanout.py into bench/.node/, which git ignores).
//
// A request with an id is answered {"result": null}; an `initialize` naming any
// initialSubscriptions makes the connection a subscriber. A dispatched action is stamped with the
// next serverSeq and an origin, serialized once into one Buffer, and that Buffer is sent as a text
// frame to every subscriber. No validation, no state, no replay, no bounds.
"use strict";

const path = require("path");
const { WebSocketServer } = require(
  process.env.AHPD_BENCH_WS || path.join(__dirname, ".node", "node_modules", "ws"),
);

const subscribers = new Set();
let seq = 0;

const server = new WebSocketServer({
  host: "127.0.0.1",
  port: 0,
  perMessageDeflate: false,
  maxPayload: 0,
});

server.on("connection", (ws) => {
  ws.on("message", (data) => {
    const message = JSON.parse(data);
    if (message.method === "dispatchAction") {
      const params = message.params;
      seq += 1;
      const envelope = {
        channel: params.channel,
        action: params.action,
        serverSeq: seq,
        origin: { clientId: "sender", clientSeq: params.clientSeq },
      };
      const frame = Buffer.from(
        JSON.stringify({ jsonrpc: "2.0", method: "action", params: envelope }),
      );
      for (const client of subscribers) {
        client.send(frame, { binary: false });
      }
      return;
    }
    if (message.method === "initialize") {
      const initial = (message.params || {}).initialSubscriptions || [];
      if (initial.length > 0) subscribers.add(ws);
    }
    if (message.id !== undefined) {
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: null }));
    }
  });
  ws.on("close", () => subscribers.delete(ws));
  ws.on("error", () => subscribers.delete(ws));
});

server.on("listening", () => {
  const { port } = server.address();
  process.stdout.write(`baseline serving ws://127.0.0.1:${port}/\n`);
});

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => process.exit(0));
}
