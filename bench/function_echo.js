// The trivial function of bench/pipelines.py: answers every POST at once with a small
// JSON body, so what is measured is what carries events to and from functions.
const http = require("http");
http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"ok":1}');
  });
}).listen(Number(process.env.PORT), "127.0.0.1");
