import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Apache Kafka's KafkaShareConsumer (KIP-932) against Eddy, for tests/e2e/test_share_groups.py.
 *
 * <pre>
 *   ShareConsume config BOOTSTRAP GROUP KEY=VALUE...       sets group configs with the Admin client
 *   ShareConsume consume BOOTSTRAP GROUP TOPIC IDLE_MS [RULE...]
 * </pre>
 *
 * consume polls with explicit acknowledgement and prints, one line each:
 * {@code rec PARTITION OFFSET DELIVERY_COUNT VALUE} for every record delivered,
 * {@code acked PARTITION OFFSET} for every acknowledgement the broker confirmed (from the
 * commit callback) and {@code failed PARTITION OFFSET} for those it did not. A RULE is
 * {@code reject:VALUE}, {@code release:VALUE} (that value is rejected or released, every
 * other accepted), {@code hold} (nothing is acknowledged and the process waits to be
 * killed), {@code sleep:MS} (per record), {@code renew:VALUE:N} (the first N times that
 * record comes, a second passes and its lock is renewed; then it is accepted), or
 * {@code prop:KEY=VALUE} (a client property,
 * such as SASL settings). It stops after IDLE_MS without a record. An error the client
 * throws is printed as {@code error CLASS} before the process exits with 3.
 */
public class ShareConsume {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "config" -> config(args);
            case "consume" -> consume(args);
            default -> throw new IllegalArgumentException(args[0]);
        }
    }

    static void config(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[1]);
        List<AlterConfigOp> ops = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET));
        }
        try (Admin admin = Admin.create(p)) {
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, args[2]);
            admin.incrementalAlterConfigs(Map.of(group, ops)).all().get();
            for (ConfigEntry e : admin.describeConfigs(List.of(group)).all().get().get(group).entries()) {
                System.out.println("config " + e.name() + "=" + e.value());
            }
        }
        System.out.println("ok");
    }

    static void consume(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[1]);
        p.put("group.id", args[2]);
        p.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("share.acknowledgement.mode", "explicit");
        p.put("max.poll.records", "20");
        String topic = args[3];
        long idleMs = Long.parseLong(args[4]);
        String reject = null, release = null;
        boolean hold = false;
        long sleepMs = 0;
        String renew = null;
        int renewals = 0;
        for (int i = 5; i < args.length; i++) {
            if (args[i].startsWith("reject:")) reject = args[i].substring(7);
            else if (args[i].startsWith("release:")) release = args[i].substring(8);
            else if (args[i].equals("hold")) hold = true;
            else if (args[i].startsWith("sleep:")) sleepMs = Long.parseLong(args[i].substring(6));
            else if (args[i].startsWith("renew:")) {
                String[] vm = args[i].substring(6).split(":", 2);
                renew = vm[0];
                renewals = Integer.parseInt(vm[1]);
            }
            else if (args[i].startsWith("prop:")) {
                String[] kv = args[i].substring(5).split("=", 2);
                p.put(kv[0], kv[1]);
            }
            else throw new IllegalArgumentException(args[i]);
        }
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
            consumer.setAcknowledgementCommitCallback((Map<TopicIdPartition, Set<Long>> offsets, Exception e) -> {
                StringBuilder out = new StringBuilder();
                offsets.forEach((tp, os) -> {
                    for (long o : os) {
                        out.append(e == null ? "acked " : "failed ").append(tp.partition()).append(' ')
                            .append(o).append('\n');
                    }
                });
                System.out.print(out);
                System.out.flush();
            });
            consumer.subscribe(List.of(topic));
            long last = System.currentTimeMillis();
            while (System.currentTimeMillis() - last < idleMs) {
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(500));
                } catch (org.apache.kafka.common.errors.AuthorizationException e) {
                    System.out.println("error " + e.getClass().getSimpleName());
                    System.out.flush();
                    System.exit(3);
                    return;
                }
                if (records.isEmpty()) {
                    continue;
                }
                last = System.currentTimeMillis();
                for (ConsumerRecord<String, String> r : records) {
                    System.out.println("rec " + r.partition() + " " + r.offset() + " "
                        + r.deliveryCount().orElse((short) -1) + " " + r.value());
                    if (sleepMs > 0) {
                        Thread.sleep(sleepMs);
                    }
                    if (hold) {
                        continue;
                    }
                    if (r.value().equals(renew) && renewals > 0) {
                        renewals--;
                        Thread.sleep(1000);
                        consumer.acknowledge(r, AcknowledgeType.RENEW);
                        System.out.println("renewed " + r.offset());
                        continue;
                    }
                    AcknowledgeType t = r.value().equals(reject) ? AcknowledgeType.REJECT
                        : r.value().equals(release) ? AcknowledgeType.RELEASE
                        : AcknowledgeType.ACCEPT;
                    consumer.acknowledge(r, t);
                }
                System.out.flush();
                if (hold) {
                    System.out.println("holding");
                    System.out.flush();
                    Thread.sleep(Long.MAX_VALUE);
                }
                try {
                    consumer.commitSync(Duration.ofSeconds(30));
                } catch (Exception e) {
                    System.out.println("commit-error " + e);
                }
            }
        }
        System.out.println("done");
    }
}
