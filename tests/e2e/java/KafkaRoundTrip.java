// The Java client (kafka-clients 4.x, which speaks Produce v13 and Fetch v13+ with topic
// ids) against Eddy: create and describe a topic, produce idempotently with a codec,
// consume everything back with assign(), delete the topic. Exits non-zero on mismatch.
// Arguments: bootstrap, topic, codec, then client settings as key=value.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class KafkaRoundTrip {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("FAILED: " + what);
            System.exit(1);
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], codec = args[2];
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        // Further client settings as key=value (security.protocol, ssl.*).
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            common.put(kv[0], kv[1]);
        }
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get();
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            check(d.partitions().size() == 3, "3 partitions");
            check(d.topicId() != null && !d.topicId().toString().isEmpty(), "topic id");
        }
        Properties pp = new Properties();
        pp.putAll(common);
        pp.put("enable.idempotence", "true");
        pp.put("acks", "all");
        pp.put("compression.type", codec);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (Producer<String, String> p = new KafkaProducer<>(pp)) {
            List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                fs.add(p.send(new ProducerRecord<>(topic, i % 3, "k" + i, "v" + i)));
            }
            for (var f : fs) f.get();
        }
        Properties cp = new Properties();
        cp.putAll(common);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        cp.put("enable.auto.commit", "false");
        Map<String, String> seen = new HashMap<>();
        try (Consumer<String, String> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1), new TopicPartition(topic, 2));
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 30000;
            while (seen.size() < 300 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    check(r.partition() == Integer.parseInt(r.key().substring(1)) % 3, "partition of " + r.key());
                    seen.put(r.key(), r.value());
                }
            }
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            check(end.values().stream().mapToLong(Long::longValue).sum() == 300, "end offsets " + end);
        }
        check(seen.size() == 300, "consumed " + seen.size());
        for (int i = 0; i < 300; i++) check(("v" + i).equals(seen.get("k" + i)), "value of k" + i);
        try (Admin admin = Admin.create(common)) {
            admin.deleteTopics(List.of(topic)).all().get();
            check(!admin.listTopics().names().get().contains(topic), "deleted");
        }
        System.out.println("ok");
    }
}
