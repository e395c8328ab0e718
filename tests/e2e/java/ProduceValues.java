// Produces one record per argument, VALUE or KEY:VALUE in hex ("-" for null; no KEY: no
// key), in one batch to partition 0 of a topic, and prints each record's outcome:
// "index<TAB>ok" or "index<TAB>exception class<TAB>message". The Java client reports the
// broker's per-record errors (record_errors) on the records they name
// (InvalidRecordException with the broker's message) and fails the others of the batch
// with a KafkaException saying they were part of a batch with an invalid record.
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ProduceValues {
    static byte[] bytes(String hex) {
        return hex.equals("-") ? null : HexFormat.of().parseHex(hex);
    }

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
            for (int i = 2; i < args.length; i++) {
                String[] kv = args[i].split(":", -1);
                byte[] key = kv.length == 2 ? bytes(kv[0]) : null;
                byte[] value = bytes(kv[kv.length - 1]);
                sent.add(producer.send(new ProducerRecord<>(topic, 0, key, value)));
            }
            producer.flush();
            for (int i = 0; i < sent.size(); i++) {
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
