import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One Java consumer (kafka-clients) that assigns every partition of a topic (no group) and
 * polls for a fixed time, for bench/fetch_sessions.py: what each Fetch it sends costs
 * with and without fetch sessions (KIP-227).
 *
 * <pre>
 *   java -cp ... ManyPartitionsConsumer BOOTSTRAP TOPIC PARTITIONS WARMUP_S WINDOW_S [key=value ...]
 * </pre>
 *
 * Polls WARMUP_S seconds (positions looked up, the session made), prints "BENCH start",
 * polls WINDOW_S seconds, prints "BENCH end", then "BENCH {json}": the client's own
 * metrics over the window (end minus start): consumer-node-metrics request-total,
 * outgoing-byte-total and incoming-byte-total summed over the nodes, fetch-manager-metrics
 * fetch-total, records-consumed-total and bytes-consumed-total, and the records poll()
 * returned. Extra arguments are consumer settings. Every line of ours starts with
 * "BENCH "; the client logs through log4j2 (configure it to stderr).
 */
public class ManyPartitionsConsumer {
    static final String[] NODE = {"request-total", "outgoing-byte-total", "incoming-byte-total"};
    static final String[] FETCH = {"fetch-total", "records-consumed-total", "bytes-consumed-total"};

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long warmupMs = (long) (Double.parseDouble(args[3]) * 1000);
        long windowMs = (long) (Double.parseDouble(args[4]) * 1000);

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "many-partitions");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        for (int i = 5; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], kv[1]);
        }

        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            long records = 0;
            long until = System.currentTimeMillis() + warmupMs;
            while (System.currentTimeMillis() < until) records += c.poll(Duration.ofMillis(100)).count();
            if (c.assignment().size() != partitions) throw new IllegalStateException("assignment " + c.assignment().size());

            Map<String, Double> before = snapshot(c);
            long t0 = System.nanoTime();
            System.out.println("BENCH start");
            System.out.flush();
            long polled = 0;
            until = System.currentTimeMillis() + windowMs;
            while (System.currentTimeMillis() < until) polled += c.poll(Duration.ofMillis(100)).count();
            Map<String, Double> after = snapshot(c);
            double seconds = (System.nanoTime() - t0) / 1e9;
            System.out.println("BENCH end");

            StringBuilder json = new StringBuilder();
            json.append("{\"window_s\":").append(seconds).append(",\"polled_records\":").append(polled)
                .append(",\"warmup_records\":").append(records);
            for (String k : after.keySet()) {
                json.append(",\"").append(k).append("\":").append(after.get(k) - before.getOrDefault(k, 0.0));
            }
            json.append("}");
            System.out.println("BENCH " + json);
        }
    }

    /** The counters above, the node ones summed over every node (the bootstrap one too). */
    static Map<String, Double> snapshot(KafkaConsumer<?, ?> c) {
        Map<String, Double> out = new TreeMap<>();
        for (Map.Entry<MetricName, ? extends Metric> e : c.metrics().entrySet()) {
            MetricName n = e.getKey();
            String[] wanted = n.group().equals("consumer-node-metrics") ? NODE
                : n.group().equals("consumer-fetch-manager-metrics") && !n.tags().containsKey("topic") ? FETCH
                : null;
            if (wanted == null) continue;
            for (String w : wanted) {
                if (!w.equals(n.name())) continue;
                Object v = e.getValue().metricValue();
                if (v instanceof Number) out.merge(w.replace('-', '_'), ((Number) v).doubleValue(), Double::sum);
            }
        }
        return out;
    }
}
