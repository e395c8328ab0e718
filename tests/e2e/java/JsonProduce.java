// The Java client producing JSON values for an expansion test: reads lines
// "<partition>\t<value or the word TOMBSTONE>" from stdin, sends each as a string (acks=all,
// idempotent, lz4), and prints "<partition> <offset>" per acknowledged record, in order.
// With a third argument "delete", it deletes the topic with the Admin client instead and
// prints "deleted" or the error's class and message.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringSerializer;

public class JsonProduce {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        if (args.length > 2 && args[2].equals("delete")) {
            Properties ap = new Properties();
            ap.put("bootstrap.servers", bootstrap);
            try (Admin admin = Admin.create(ap)) {
                admin.deleteTopics(List.of(topic)).all().get();
                System.out.println("deleted");
            } catch (java.util.concurrent.ExecutionException e) {
                System.out.println(e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
            }
            return;
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("enable.idempotence", "true");
        pp.put("acks", "all");
        pp.put("compression.type", "lz4");
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (Producer<String, String> p = new KafkaProducer<>(pp)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isEmpty()) continue;
                String[] parts = line.split("\t", 2);
                int partition = Integer.parseInt(parts[0]);
                String value = parts[1].equals("TOMBSTONE") ? null : parts[1];
                sent.add(p.send(new ProducerRecord<>(topic, partition, "k", value)));
            }
            p.flush();
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata m = f.get();
                System.out.println(m.partition() + " " + m.offset());
            }
        }
    }
}
