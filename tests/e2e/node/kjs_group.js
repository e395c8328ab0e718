// @confluentinc/kafka-javascript (librdkafka underneath) through its promisified
// KafkaJS-compatible API, against Eddy: one mode per run, driven by
// tests/e2e/test_kafka_javascript.py.
//
//   node kjs_group.js produce    BOOTSTRAP TOPIC START COUNT : keyed records k<i> = v<i>
//                                for i in [START, START+COUNT), acks=all, idempotent;
//                                prints {"event":"produced",...} with each partition's count
//   node kjs_group.js consume    BOOTSTRAP TOPIC GROUP       : one member of GROUP (no
//                                auto-commit, fromBeginning); prints one JSON line per
//                                assignment, revocation and record; on the line "stop" on
//                                stdin it commits what it read, leaves, prints "done"
//   node kjs_group.js admin      BOOTSTRAP TOPIC GROUP       : listGroups, describeGroups
//                                and fetchOffsets of GROUP on TOPIC, as one JSON line
//
// Every line on stdout is one JSON object with an "event"; the client's own log goes to
// stderr. A run that lasts more than LIMIT_MS (default 120 s) exits 3, so no run hangs.
const { Kafka, logLevel, ConsumerGroupStates, ConsumerGroupTypes } = require("@confluentinc/kafka-javascript").KafkaJS;

const stateName = (v) => Object.keys(ConsumerGroupStates).find((k) => ConsumerGroupStates[k] === v) || String(v);
const typeName = (v) => Object.keys(ConsumerGroupTypes).find((k) => ConsumerGroupTypes[k] === v) || String(v);

const [mode, bootstrap, topic, ...rest] = process.argv.slice(2);
const LIMIT_MS = Number(process.env.LIMIT_MS || 120000);

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
}

function fail(msg) {
  emit("error", { message: String(msg) });
  process.stderr.write(`${msg}\n`);
  process.exit(1);
}

setTimeout(() => fail(`${mode}: still running after ${LIMIT_MS} ms`), LIMIT_MS).unref();

// The compat layer's default logger writes to stdout, which is ours.
const logger = {
  level: logLevel.INFO,
  setLogLevel(l) { this.level = l; },
  namespace() { return this; },
  log(kind, message, extra) {
    process.stderr.write(`[${new Date().toISOString()}] ${kind} ${message} ${JSON.stringify(extra || {})}\n`);
  },
  error(m, e) { if (this.level >= logLevel.ERROR) this.log("ERROR", m, e); },
  warn(m, e) { if (this.level >= logLevel.WARN) this.log("WARN", m, e); },
  info(m, e) { if (this.level >= logLevel.INFO) this.log("INFO", m, e); },
  debug(m, e) { if (this.level >= logLevel.DEBUG) this.log("DEBUG", m, e); },
};

const kafka = new Kafka({
  kafkaJS: { clientId: `eddy-kjs-${mode}`, brokers: bootstrap.split(","), logger, logLevel: logLevel.INFO },
});

async function produce(start, count) {
  const producer = kafka.producer({ "linger.ms": 5, kafkaJS: { acks: -1, idempotent: true } });
  await producer.connect();
  const messages = [];
  for (let i = start; i < start + count; i++) messages.push({ key: `k${i}`, value: `v${i}` });
  const perPartition = {};
  // One send per record, all in flight at once (librdkafka batches them): each result is
  // that record's partition.
  const sends = messages.map((m) => producer.send({ topic, messages: [m] }));
  for (const results of await Promise.all(sends)) {
    for (const r of results) {
      if (r.errorCode !== 0) fail(`produce error ${JSON.stringify(r)}`);
      perPartition[r.partition] = (perPartition[r.partition] || 0) + 1;
    }
  }
  await producer.flush({ timeout: 30000 });
  await producer.disconnect();
  emit("produced", { count, perPartition });
}

async function consume(group) {
  const consumer = kafka.consumer({
    // Rebalance events reach us here (called before the assignment is applied).
    rebalance_cb: (err, assignment) => {
      const partitions = assignment.map((tp) => tp.partition).sort((a, b) => a - b);
      if (err.code === -175) emit("assigned", { partitions });
      else if (err.code === -174) emit("revoked", { partitions });
      else emit("rebalance-error", { code: err.code, message: err.message });
    },
    kafkaJS: {
      groupId: group,
      fromBeginning: true,
      autoCommit: false,
      sessionTimeout: 10000,
      heartbeatInterval: 1000,
    },
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic] });
  let stopping = false;
  let read = 0;
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      read++;
      emit("message", { p: partition, o: Number(message.offset), k: message.key.toString(), v: message.value.toString() });
    },
  });
  emit("running");
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    // With no argument: the offsets of every record handed to eachMessage (+1).
    await consumer.commitOffsets();
    emit("committed", { read, assignment: consumer.assignment().map((tp) => tp.partition).sort((a, b) => a - b) });
    await consumer.disconnect();
    emit("done", { read });
    process.exit(0);
  };
  let buf = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (d) => {
    buf += d;
    if (buf.split("\n").includes("stop")) stop().catch((e) => fail(e.stack || e));
  });
  process.stdin.on("end", () => stop().catch((e) => fail(e.stack || e)));
}

async function admin(group) {
  const a = kafka.admin();
  await a.connect();
  const listed = await a.listGroups({ timeout: 10000 });
  const described = await a.describeGroups([group], { timeout: 10000 });
  const offsets = await a.fetchOffsets({ groupId: group, topics: [topic], timeout: 10000 });
  await a.disconnect();
  const g = described.groups[0];
  emit("admin", {
    listed: listed.groups.map((x) => ({ groupId: x.groupId, state: stateName(x.state), type: typeName(x.type), protocolType: x.protocolType,
                                        isSimpleConsumerGroup: x.isSimpleConsumerGroup })),
    listErrors: (listed.errors || []).map((e) => String(e)),
    group: {
      groupId: g.groupId,
      state: stateName(g.state),
      type: typeName(g.type),
      protocol: g.protocol,
      protocolType: g.protocolType,
      error: g.error ? String(g.error.message || g.error) : null,
      members: (g.members || []).map((m) => ({
        memberId: m.memberId,
        clientId: m.clientId,
        partitions: ((m.assignment && m.assignment.topicPartitions) || [])
          .filter((tp) => tp.topic === topic)
          .map((tp) => tp.partition)
          .sort((x, y) => x - y),
      })),
    },
    offsets: offsets.flatMap((t) => t.partitions.map((p) => ({ topic: t.topic, partition: p.partition, offset: Number(p.offset) }))),
  });
}

(async () => {
  if (mode === "produce") await produce(Number(rest[0]), Number(rest[1]));
  else if (mode === "consume") await consume(rest[0]);
  else if (mode === "admin") await admin(rest[0]);
  else fail(`unknown mode ${mode}`);
  if (mode !== "consume") process.exit(0);
})().catch((e) => fail(e.stack || String(e)));
