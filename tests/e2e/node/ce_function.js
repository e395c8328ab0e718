// A function on the CloudEvents JavaScript SDK (cloudevents on npm): a plain Node HTTP
// server on $PORT that reads each request with HTTP.toEvent (one event in binary mode, or
// a batch), records what it got in $OUT, and answers: a binary-mode reply for one event,
// a JSON list of structured replies for a batch.
const http = require("http");
const fs = require("fs");
const { HTTP, CloudEvent } = require("cloudevents");

const out = process.env.OUT;
http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    if (req.method !== "POST") { res.writeHead(200); res.end("ok"); return; }
    const got = HTTP.toEvent({ headers: req.headers, body: Buffer.concat(chunks).toString() });
    const events = Array.isArray(got) ? got : [got];
    for (const e of events) {
      fs.appendFileSync(out, JSON.stringify({ id: e.id, batch: Array.isArray(got) ? events.length : 0 }) + "\n");
    }
    const replies = events.map((e) => new CloudEvent({ type: "example.thumbnail", source: "node", data: { from: e.id } }));
    if (Array.isArray(got)) {
      res.writeHead(200, { "content-type": "application/cloudevents-batch+json" });
      res.end(JSON.stringify(replies.map((r) => r.toJSON())));
    } else {
      const m = HTTP.binary(replies[0]);
      res.writeHead(200, m.headers);
      res.end(typeof m.body === "string" ? m.body : JSON.stringify(m.body));
    }
  });
}).listen(Number(process.env.PORT), "127.0.0.1");
