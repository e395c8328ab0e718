// kafkajs against Eddy: create a topic, produce idempotently (plain and gzip), and read
// the partition offsets back. The test that runs this consumes the records with another
// client (kafkajs consumers need consumer groups). Exits non-zero on any mismatch.
const { Kafka, CompressionTypes, logLevel } = require("kafkajs");

const brokers = process.env.BOOTSTRAP.split(",");
const topic = process.env.TOPIC;
const kafka = new Kafka({ clientId: "eddy-e2e", brokers, logLevel: logLevel.NOTHING });

function fail(msg) {
  console.error(msg);
  process.exit(1);
}

(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  if (meta.topics[0].partitions.length !== 2) fail(`partitions: ${JSON.stringify(meta)}`);

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const messages = [];
  for (let i = 0; i < 100; i++) messages.push({ key: `k${i}`, value: `v${i}`, headers: { n: `${i}` }, partition: i % 2 });
  const plain = await producer.send({ topic, messages: messages.slice(0, 50), acks: -1 });
  const gz = await producer.send({ topic, messages: messages.slice(50), compression: CompressionTypes.GZIP, acks: -1 });
  if (plain.some((r) => r.errorCode !== 0) || gz.some((r) => r.errorCode !== 0)) fail("produce errors");
  await producer.disconnect();

  const offsets = await admin.fetchTopicOffsets(topic);
  const total = offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  if (total !== 100) fail(`offsets: ${JSON.stringify(offsets)}`);

  await admin.disconnect();
  console.log(JSON.stringify({ ok: true, produced: 100 }));
})().catch((e) => fail(e.stack || String(e)));
