// A Kafka Streams 4.4 application with processing.guarantee=exactly_once_v2, for
// tests/e2e/test_kafka_streams.py: it reads numbers from INPUT, re-keys each by its
// remainder modulo 4 (a repartition topic), counts per key in a state store (its
// changelog a compacted topic) and writes every new count to OUTPUT. With the record
// cache off every input record gives one output record, so at read_committed each key's
// counts must be exactly 1, 2, 3, ... however often the application or the broker is
// killed: what exactly-once means here.
//
//   java StreamsEos BOOTSTRAP APPLICATION_ID INPUT OUTPUT STATE_DIR
//
// Prints "state RUNNING" (and every other state it enters) on stdout; runs until killed.

import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public class StreamsEos {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3], stateDir = args[4];
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        // A killed instance's place is given to its successor within seconds.
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
        // Small polls: many transactions, so a kill lands inside one.
        p.put(StreamsConfig.consumerPrefix("max.poll.records"), 50);
        // Back quickly after the broker is killed and restarted.
        p.put("reconnect.backoff.ms", 50);
        p.put("reconnect.backoff.max.ms", 500);
        p.put("retry.backoff.ms", 50);
        p.put("retry.backoff.max.ms", 500);
        p.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), 10000);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((k, v) -> "g" + (Long.parseLong(v) % 4))
            .groupByKey(Grouped.with("by-remainder", Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream()
            .mapValues(Object::toString)
            .to(output, Produced.with(Serdes.String(), Serdes.String()));
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + now);
            System.out.flush();
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("error " + e);
            System.out.flush();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.start();
        Thread.sleep(Long.MAX_VALUE);
    }
}
