// The Java client 4.x on the KIP-848 consumer group protocol (group.protocol=consumer),
// driven by tests/e2e/test_consumer_protocol.py.
//
//   ConsumerProtocol BOOTSTRAP consume TOPIC GROUP TOTAL
//       subscribes, prints each record as a JSON line and commits after every poll, and
//       stops once TOTAL records were read by the group (its committed offsets say so)
//       or nothing came for 5 s after the first record;
//   ConsumerProtocol BOOTSTRAP describe GROUP
//       prints the admin client's view of the group and its committed offsets as JSON.

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ConsumerProtocol {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        switch (args[1]) {
            case "consume" -> consume(bootstrap, args[2], args[3], Long.parseLong(args[4]));
            case "describe" -> describe(bootstrap, args[2]);
            default -> throw new IllegalArgumentException(args[1]);
        }
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    static void consume(String bootstrap, String topic, String group, long total) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("group.protocol", "consumer");
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
             Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 120_000;
            long lastRecord = 0;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(300));
                for (ConsumerRecord<String, String> r : records) {
                    System.out.println("{\"partition\":" + r.partition() + ",\"offset\":" + r.offset()
                            + ",\"value\":" + quote(r.value()) + "}");
                    lastRecord = System.currentTimeMillis();
                }
                if (!records.isEmpty()) {
                    c.commitSync();
                }
                long committed = 0;
                for (OffsetAndMetadata o : admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get().values()) {
                    if (o != null) {
                        committed += o.offset();
                    }
                }
                if (committed >= total) {
                    break;
                }
                if (lastRecord > 0 && System.currentTimeMillis() - lastRecord > 5_000) {
                    break;
                }
            }
            System.out.flush();
        }
    }

    static void describe(String bootstrap, String group) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group))
                    .describedGroups().get(group).get();
            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get();
            Map<Integer, Long> byPartition = new TreeMap<>();
            offsets.forEach((tp, o) -> byPartition.put(tp.partition(), o.offset()));
            StringBuilder o = new StringBuilder();
            byPartition.forEach((k, v) -> o.append(o.length() == 0 ? "" : ",").append("\"" + k + "\":" + v));
            System.out.println("{\"type\":" + quote(d.type().name()) + ",\"state\":" + quote(d.groupState().name())
                    + ",\"members\":" + d.members().size()
                    + ",\"epoch\":" + d.groupEpoch().orElse(-1)
                    + ",\"assignor\":" + quote(d.partitionAssignor())
                    + ",\"offsets\":{" + o + "}}");
        }
    }
}
