// A long-lived Java client for the rebootstrap tests (KIP-1102, KIP-1242), until its stdin
// closes. `produce BOOTSTRAP TOPIC`: an idempotent producer sending "v0", "v1", ... 20 at
// a time, printing "acked VALUE PARTITION OFFSET" or "failed VALUE EXCEPTION". `topics
// BOOTSTRAP`: a consumer listing the topics every 100 ms, printing "topics A,B,..." for
// each answer (a consumer: the admin client names no cluster in ApiVersions). Extra
// client settings come as KEY=VALUE arguments after those.
// The client's log (log4j2) is where it says the broker asked it to rebootstrap.
import java.io.*;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;
import java.time.Duration;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Rebootstrap {
    public static void main(String[] args) throws Exception {
        String mode = args[0];
        Properties p = new Properties();
        p.put("bootstrap.servers", args[1]);
        int extra = mode.equals("produce") ? 3 : 2;
        for (int i = extra; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            p.put(kv[0], kv[1]);
        }
        AtomicBoolean open = new AtomicBoolean(true);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                }
            } catch (IOException e) {
            }
            open.set(false);
        });
        stdin.setDaemon(true);
        stdin.start();
        if (mode.equals("produce")) {
            produce(p, args[2], open);
        } else {
            topics(p, open);
        }
    }

    static void produce(Properties p, String topic, AtomicBoolean open) throws Exception {
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            // Windows of 20 records in flight at once, so they go to every partition's
            // leader (one at a time, a client only ever needs one broker).
            for (int i = 0; open.get(); i += 20) {
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (int j = i; j < i + 20; j++) {
                    String value = "v" + j;
                    sent.add(producer.send(new ProducerRecord<>(topic, value, value)));
                }
                for (int j = 0; j < sent.size(); j++) {
                    String value = "v" + (i + j);
                    try {
                        RecordMetadata m = sent.get(j).get();
                        System.out.println("acked " + value + " " + m.partition() + " " + m.offset());
                    } catch (ExecutionException e) {
                        System.out.println("failed " + value + " " + e.getCause());
                    }
                }
                System.out.flush();
            }
        }
    }

    static void topics(Properties p, AtomicBoolean open) throws Exception {
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            while (open.get()) {
                try {
                    TreeSet<String> names = new TreeSet<>(consumer.listTopics(Duration.ofSeconds(30)).keySet());
                    System.out.println("topics " + String.join(",", names));
                    System.out.flush();
                } catch (org.apache.kafka.common.errors.TimeoutException e) {
                    // The server is away for a moment: ask again.
                }
                Thread.sleep(100);
            }
        }
    }
}
