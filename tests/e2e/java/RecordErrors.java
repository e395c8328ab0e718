// Produces three records in one batch to a compacted topic, the middle one without a key,
// and prints each record's outcome: "index<TAB>exception class<TAB>message" (or "ok").
// With the broker's per-record errors (record_errors), the Java client fails the keyless
// record with InvalidRecordException and the broker's message, and the others with a
// KafkaException saying they were part of a batch with an invalid record.
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class RecordErrors {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("linger.ms", "500");
        p.put("retries", "0");
        p.put("enable.idempotence", "false");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        String topic = args[1];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            byte[][] keys = {"a".getBytes(), null, "c".getBytes()};
            for (int i = 0; i < 3; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, keys[i], ("v" + i).getBytes())));
            }
            producer.flush();
            for (int i = 0; i < 3; i++) {
                try {
                    sent.get(i).get(30, TimeUnit.SECONDS);
                    System.out.println(i + "\tok");
                } catch (ExecutionException e) {
                    Throwable c = e.getCause();
                    System.out.println(i + "\t" + c.getClass().getSimpleName() + "\t" + c.getMessage());
                }
            }
        }
    }
}
