// kafkajs and Kafka transactions against Eddy, in two modes (argv[2]):
//
//   produce: a transactional producer (TXN_ID) writes one committed and one aborted
//            transaction to TOPIC (PARTITIONS partitions, values kjs-c-<i> / kjs-a-<i>)
//            and prints {"committed": [...], "aborted": [...]}.
//   consume: a group consumer (GROUP) reads TOPIC from the beginning, at read_committed
//            unless READ_UNCOMMITTED=1, until every partition's position reached ENDS
//            (JSON {partition: offset}), and prints [{partition, offset, value}].
//
// Exits non-zero on any error or when the end is not reached in 60 s.
const { Kafka, logLevel } = require("kafkajs");

const brokers = process.env.BOOTSTRAP.split(",");
const topic = process.env.TOPIC;
const kafka = new Kafka({ clientId: "eddy-e2e-txn", brokers, logLevel: logLevel.NOTHING });

function fail(msg) {
  console.error(msg);
  process.exit(1);
}

async function produce() {
  const partitions = Number(process.env.PARTITIONS || "2");
  const producer = kafka.producer({
    transactionalId: process.env.TXN_ID,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  const out = { committed: [], aborted: [] };
  for (const [kind, prefix] of [["committed", "kjs-c"], ["aborted", "kjs-a"]]) {
    const txn = await producer.transaction();
    const messages = [];
    for (let i = 0; i < 6; i++) messages.push({ value: `${prefix}-${i}`, partition: i % partitions });
    await txn.send({ topic, messages });
    if (kind === "committed") await txn.commit();
    else await txn.abort();
    out[kind] = messages.map((m) => m.value);
  }
  await producer.disconnect();
  console.log(JSON.stringify(out));
}

async function consume() {
  const ends = JSON.parse(process.env.ENDS);
  const consumer = kafka.consumer({
    groupId: process.env.GROUP,
    readUncommitted: process.env.READ_UNCOMMITTED === "1",
    maxWaitTimeInMs: 200,
  });
  const got = [];
  const position = {};
  const done = () => Object.entries(ends).every(([p, end]) => (position[p] || 0) >= Number(end));
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  // Batches of only aborted records or control records never reach eachMessage: the
  // end-of-batch event says where the consumer got to.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.topic !== topic || payload.lastOffset === null) return;
    const next = Number(payload.lastOffset) + 1;
    position[payload.partition] = Math.max(position[payload.partition] || 0, next);
    if (done()) finish();
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      got.push({ partition, offset: Number(message.offset), value: message.value.toString() });
    },
  });
  const timer = setTimeout(() => {
    fail(`not at the end after 60 s: positions ${JSON.stringify(position)}, ends ` +
      `${JSON.stringify(ends)}, got ${JSON.stringify(got)}`);
  }, 60000);
  if (!done()) await finished;
  clearTimeout(timer);
  await consumer.disconnect();
  console.log(JSON.stringify(got));
}

const mode = process.argv[2];
(mode === "produce" ? produce() : mode === "consume" ? consume() : Promise.reject(new Error(`mode ${mode}?`)))
  .catch((e) => fail(e.stack || String(e)));
