// Kafka transactions (KIP-98, the transaction version 1 flow of kafka-clients 4.x) against
// Eddy with the Java client: one scenario per run, named by the second argument.
//
//   TxnClient <bootstrap> commit-abort <prefix>      committed and aborted transactions over
//                                                    two topics at both isolation levels
//   TxnClient <bootstrap> zombie <prefix>            a second producer with the same
//                                                    transactional.id fences the first
//   TxnClient <bootstrap> ctp <prefix>               consume-transform-produce with
//                                                    sendOffsetsToTransaction
//   TxnClient <bootstrap> lso <prefix>               an open transaction holds back a later
//                                                    plain record at read_committed
//   TxnClient <bootstrap> admin <prefix>             listTransactions, describeTransactions,
//                                                    describeProducers, fenceProducers
//   TxnClient <bootstrap> timeout <prefix> <max>     the coordinator aborts a transaction
//                                                    past its timeout; one above <max> (the
//                                                    server's maximum) is refused
//   TxnClient <bootstrap> durable-prepare <prefix>   a committed and an open transaction,
//                                                    then halt (the test kills the server)
//   TxnClient <bootstrap> durable-admin <prefix>     after the kill: the admin APIs still
//                                                    show the open transaction (read-only)
//   TxnClient <bootstrap> durable-check <prefix>     both survived the server's kill -9
//
// Prints "ok <check>" per check and "ok" at the end; on the first mismatch or unexpected
// exception it prints the stack trace and exits 1.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.*;
import org.apache.kafka.common.serialization.*;

public class TxnClient {
    static String bootstrap;
    static Admin admin;

    // Checks -------------------------------------------------------------------------

    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
        System.out.println("ok " + what);
    }

    static void eq(Object want, Object got, String what) {
        if (!Objects.equals(want, got)) throw new AssertionError(what + ": want " + want + ", got " + got);
        System.out.println("ok " + what);
    }

    /** Polls `cond` every 100 ms until it holds; fails with `last()` after `ms`. */
    static void await(Supplier<Boolean> cond, long ms, String what, Supplier<Object> last) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (!cond.get()) {
            if (System.currentTimeMillis() > deadline)
                throw new AssertionError("timed out after " + ms + " ms waiting for " + what + " (last: " + last.get() + ")");
            Thread.sleep(100);
        }
        System.out.println("ok " + what);
    }

    interface Action { void run() throws Exception; }

    /** Runs `a`, which must fail because the producer was fenced: ProducerFencedException
     *  or InvalidProducerEpochException, possibly wrapped. */
    static Throwable expectFenced(Action a, String what) {
        try {
            a.run();
        } catch (Throwable t) {
            for (Throwable c = t; c != null; c = c.getCause()) {
                if (c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException) {
                    System.out.println("ok " + what + ": " + c.getClass().getSimpleName() + ": " + c.getMessage());
                    return c;
                }
            }
            throw new AssertionError(what + ": unexpected " + t, t);
        }
        throw new AssertionError(what + ": no error");
    }

    /** The exception `a` throws (unwrapping ExecutionException), or null. */
    static Throwable failure(Action a) {
        try {
            a.run();
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Throwable t) {
            return t;
        }
    }

    // Clients ------------------------------------------------------------------------

    static Properties base() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static KafkaProducer<String, String> producer(String txnId, Map<String, Object> extra) {
        Properties p = base();
        if (txnId != null) p.put("transactional.id", txnId);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "30000");
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaProducer<String, String> producer(String txnId) {
        return producer(txnId, Map.of());
    }

    static KafkaConsumer<String, String> consumer(String isolation, Map<String, Object> extra) {
        Properties p = base();
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < n; i++) tps.add(new TopicPartition(topic, i));
        return tps;
    }

    static void createTopic(String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }

    /** Every record of `tps` from the log start to the end offset at `isolation` (the last
     *  stable offset at read_committed, the high watermark at read_uncommitted). */
    static List<ConsumerRecord<String, String>> readAll(Collection<TopicPartition> tps, String isolation) throws Exception {
        try (KafkaConsumer<String, String> c = consumer(isolation, Map.of())) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(30));
            List<ConsumerRecord<String, String>> out = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 30000;
            while (!tps.stream().allMatch(tp -> c.position(tp) >= end.get(tp))) {
                if (System.currentTimeMillis() > deadline)
                    throw new AssertionError("reading " + tps + " at " + isolation + " to " + end + ": at "
                        + tps.stream().map(tp -> tp + "=" + c.position(tp)).collect(Collectors.joining(",")));
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) out.add(r);
            }
            return out;
        }
    }

    /** Values per partition, in offset order. */
    static Map<TopicPartition, List<String>> byPartition(List<ConsumerRecord<String, String>> recs) {
        Map<TopicPartition, List<String>> m = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        for (ConsumerRecord<String, String> r : recs)
            m.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), k -> new ArrayList<>()).add(r.value());
        return m;
    }

    static List<String> values(List<ConsumerRecord<String, String>> recs) {
        return recs.stream().map(ConsumerRecord::value).collect(Collectors.toList());
    }

    static List<String> sorted(Collection<String> vs) {
        List<String> l = new ArrayList<>(vs);
        Collections.sort(l);
        return l;
    }

    static Map<TopicPartition, Long> latest(Collection<TopicPartition> tps, IsolationLevel level) throws Exception {
        Map<TopicPartition, OffsetSpec> q = new HashMap<>();
        for (TopicPartition tp : tps) q.put(tp, OffsetSpec.latest());
        Map<TopicPartition, Long> out = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        admin.listOffsets(q, new ListOffsetsOptions(level)).all().get()
            .forEach((tp, info) -> out.put(tp, info.offset()));
        return out;
    }

    static Map<TopicPartition, Long> lso(Collection<TopicPartition> tps) {
        try {
            return latest(tps, IsolationLevel.READ_COMMITTED);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static Map<TopicPartition, Long> hwm(Collection<TopicPartition> tps) {
        try {
            return latest(tps, IsolationLevel.READ_UNCOMMITTED);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static TransactionDescription describe(String txnId) {
        try {
            return admin.describeTransactions(List.of(txnId)).description(txnId).get();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    static Map<String, TransactionListing> listTxns(ListTransactionsOptions o) throws Exception {
        Map<String, TransactionListing> m = new HashMap<>();
        for (TransactionListing l : admin.listTransactions(o).all().get()) m.put(l.transactionalId(), l);
        return m;
    }

    static Optional<ProducerState> producerOn(TopicPartition tp, long producerId) throws Exception {
        return admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers().stream()
            .filter(s -> s.producerId() == producerId).findFirst();
    }

    /** The group's committed offsets (OffsetFetch for all its partitions, require_stable
     *  off): partition -> offset, partitions without one left out. */
    static Map<TopicPartition, Long> groupOffsets(String group) {
        try {
            Map<TopicPartition, Long> out = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
            admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .forEach((tp, om) -> { if (om != null) out.put(tp, om.offset()); });
            return out;
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** OffsetFetch for `tps` with require_stable: partition -> committed offset (-1 when
     *  none). A partition the broker answers with an error (UNSTABLE_OFFSET_COMMIT while a
     *  transaction holds offsets for it) is left out: the admin client skips it. */
    static Map<TopicPartition, Long> stableOffsets(String group, List<TopicPartition> tps) {
        try {
            Map<TopicPartition, Long> out = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
            admin.listConsumerGroupOffsets(Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(tps)),
                    new ListConsumerGroupOffsetsOptions().requireStable(true))
                .partitionsToOffsetAndMetadata(group).get()
                .forEach((tp, om) -> out.put(tp, om == null ? -1L : om.offset()));
            return out;
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** Sends one record per value to `tp` and waits for each acknowledgement. */
    static List<RecordMetadata> sendAll(Producer<String, String> p, TopicPartition tp, List<String> vs) throws Exception {
        List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
        for (String v : vs) fs.add(p.send(new ProducerRecord<>(tp.topic(), tp.partition(), v, v)));
        List<RecordMetadata> out = new ArrayList<>();
        for (var f : fs) out.add(f.get());
        return out;
    }

    static List<String> vals(String tag, TopicPartition tp, int n) {
        List<String> l = new ArrayList<>();
        for (int i = 0; i < n; i++) l.add(tag + "-" + tp.topic().substring(tp.topic().length() - 1) + tp.partition() + "-" + i);
        return l;
    }

    // Scenarios ----------------------------------------------------------------------

    /** Committed, aborted and committed transactions, each over every partition of two
     *  topics: read_committed sees exactly the committed values, read_uncommitted all of
     *  them; each transaction's marker takes an offset. */
    static void commitAbort(String prefix) throws Exception {
        String a = prefix + "-a", b = prefix + "-b";
        createTopic(a, 3);
        createTopic(b, 2);
        List<TopicPartition> tps = new ArrayList<>(partitions(a, 3));
        tps.addAll(partitions(b, 2));
        Map<TopicPartition, List<String>> committed = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        Map<TopicPartition, List<String>> all = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        try (KafkaProducer<String, String> p = producer(prefix + "-txn")) {
            p.initTransactions();
            check(true, "initTransactions");
            for (String tag : List.of("c1", "a1", "c2")) {
                p.beginTransaction();
                List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
                for (TopicPartition tp : tps) {
                    for (String v : vals(tag, tp, 3)) {
                        fs.add(p.send(new ProducerRecord<>(tp.topic(), tp.partition(), v, v)));
                        all.computeIfAbsent(tp, k -> new ArrayList<>()).add(v);
                        if (tag.startsWith("c")) committed.computeIfAbsent(tp, k -> new ArrayList<>()).add(v);
                    }
                }
                // On the broker before the transaction ends: an abort has records to hide.
                for (var f : fs) f.get();
                if (tag.startsWith("c")) p.commitTransaction();
                else p.abortTransaction();
                check(true, (tag.startsWith("c") ? "committed " : "aborted ") + tag + " over " + tps.size() + " partitions");
            }
        }
        // 3 transactions of 3 records and a marker each per partition. The markers of the
        // last one may still be on their way after commitTransaction returns.
        Map<TopicPartition, Long> twelve = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        for (TopicPartition tp : tps) twelve.put(tp, 12L);
        await(() -> lso(tps).equals(twelve), 30000, "last stable offsets past the last markers", () -> lso(tps));
        eq(twelve, hwm(tps), "high watermarks = last stable offsets = 3 x (3 records + 1 marker)");

        List<ConsumerRecord<String, String>> rc = readAll(tps, "read_committed");
        eq(committed, byPartition(rc), "read_committed: the committed values, in order");
        for (ConsumerRecord<String, String> r : rc) {
            long want = r.value().startsWith("c1") ? Long.parseLong(r.value().substring(r.value().lastIndexOf('-') + 1))
                : 8 + Long.parseLong(r.value().substring(r.value().lastIndexOf('-') + 1));
            if (r.offset() != want) throw new AssertionError(r.value() + " at offset " + r.offset() + ", want " + want);
        }
        check(true, "committed records at offsets 0-2 and 8-10 (markers at 3, 7, 11)");
        eq(all, byPartition(readAll(tps, "read_uncommitted")), "read_uncommitted: every value, aborted ones too");
    }

    /** The transaction protocol the broker offers (`transaction.version`, 1 or 2) is the
     *  one the client speaks: at 2 every commit and abort moves the producer to the next
     *  epoch (KIP-890; describeTransactions shows it), and a transaction's partitions and
     *  group are added by its produce and offset commit alone; at 1 the epoch stays. */
    static void epochs(String prefix, int level) throws Exception {
        FeatureMetadata features = admin.describeFeatures().featureMetadata().get();
        eq((short) 2, features.supportedFeatures().get("transaction.version").maxVersion(),
                "transaction.version supported up to 2");
        eq((short) level, features.finalizedFeatures().get("transaction.version").maxVersionLevel(),
                "transaction.version finalized");
        String topic = prefix, group = prefix + "-g", txnId = prefix + "-txn";
        createTopic(topic, 2);
        List<TopicPartition> tps = partitions(topic, 2);
        List<String> committed = new ArrayList<>();
        try (KafkaProducer<String, String> p = producer(txnId)) {
            p.initTransactions();
            int first = describe(txnId).producerEpoch();
            int n = 0;
            for (String tag : List.of("c1", "a1", "c2", "c3")) {
                p.beginTransaction();
                for (TopicPartition tp : tps) {
                    for (String v : vals(tag, tp, 2)) {
                        p.send(new ProducerRecord<>(tp.topic(), tp.partition(), v, v)).get();
                        if (tag.startsWith("c")) committed.add(v);
                    }
                }
                // The group's offsets go with the transaction (TxnOffsetCommit).
                p.sendOffsetsToTransaction(Map.of(tps.get(0), new OffsetAndMetadata(++n * 10L)),
                        new ConsumerGroupMetadata(group));
                TransactionDescription open = describe(txnId);
                eq(TransactionState.ONGOING, open.state(), tag + ": ongoing");
                eq(new HashSet<>(tps), new HashSet<>(open.topicPartitions()), tag + ": partitions in the transaction");
                if (tag.startsWith("c")) p.commitTransaction();
                else p.abortTransaction();
                TransactionDescription ended = describe(txnId);
                eq(first + (level >= 2 ? n : 0), (int) ended.producerEpoch(), tag + ": producer epoch after the end");
                eq(tag.startsWith("c") ? TransactionState.COMPLETE_COMMIT : TransactionState.COMPLETE_ABORT,
                        ended.state(), tag + ": state after the end");
            }
        }
        eq(sorted(committed), sorted(values(readAll(tps, "read_committed"))), "read_committed: the committed values");
        eq(Map.of(tps.get(0), 40L), groupOffsets(group), "the group's offset: the last committed transaction's");
    }

    /** A second producer with the same transactional.id aborts the first one's open
     *  transaction and fences it: its next produce and its commit fail. */
    static void zombie(String prefix) throws Exception {
        String t = prefix;
        createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        String id = prefix + "-txn";
        try (KafkaProducer<String, String> p1 = producer(id)) {
            p1.initTransactions();
            p1.beginTransaction();
            sendAll(p1, tp, List.of("zombie-1"));
            check(true, "first producer's transaction open with a record");
            eq(Map.of(tp, 0L), lso(List.of(tp)), "its record held back at read_committed");
            try (KafkaProducer<String, String> p2 = producer(id)) {
                p2.initTransactions();
                check(true, "second producer with the same transactional.id initialised");
                await(() -> lso(List.of(tp)).equals(hwm(List.of(tp))), 30000,
                    "the first producer's transaction aborted (marker written)", () -> lso(List.of(tp)) + " vs " + hwm(List.of(tp)));
                expectFenced(() -> {
                    p1.send(new ProducerRecord<>(t, 0, "zombie-2", "zombie-2"));
                    p1.commitTransaction();
                }, "the zombie's produce and commit are fenced");
                p2.beginTransaction();
                sendAll(p2, tp, List.of("fresh"));
                p2.commitTransaction();
                check(true, "second producer committed");
            }
        }
        await(() -> lso(List.of(tp)).equals(hwm(List.of(tp))), 30000, "no open transaction left", () -> lso(List.of(tp)) + " vs " + hwm(List.of(tp)));
        eq(List.of("fresh"), values(readAll(List.of(tp), "read_committed")), "read_committed: only the second producer's record");
        eq(List.of("zombie-1", "fresh"), values(readAll(List.of(tp), "read_uncommitted")),
            "read_uncommitted: the zombie's aborted record, not the fenced one");
    }

    /** Consume-transform-produce: the group's offsets go with the output records,
     *  visible only once the transaction commits; an aborted round leaves them as they
     *  were, and redone from them it gives every output once. */
    static void ctp(String prefix) throws Exception {
        String in = prefix + "-in", out = prefix + "-out", group = prefix + "-g";
        createTopic(in, 2);
        createTopic(out, 1);
        List<TopicPartition> inTps = partitions(in, 2);
        TopicPartition outTp = new TopicPartition(out, 0);
        try (KafkaProducer<String, String> plain = producer(null)) {
            for (int i = 0; i < 10; i++) sendAll(plain, inTps.get(i % 2), List.of("v" + i));
        }
        try (KafkaConsumer<String, String> c = consumer("read_committed", Map.of(
                 "group.id", group, "auto.offset.reset", "earliest"));
             KafkaProducer<String, String> p = producer(prefix + "-txn")) {
            c.subscribe(List.of(in));
            p.initTransactions();

            // Round 1, committed.
            List<ConsumerRecord<String, String>> got = pollN(c, 10);
            Map<TopicPartition, OffsetAndMetadata> offs = nextOffsets(got);
            eq(Map.of(inTps.get(0), 5L, inTps.get(1), 5L), plainOffsets(offs), "consumed 10 input records");
            ConsumerGroupMetadata gm = c.groupMetadata();
            check(gm.generationId() > 0 && !gm.memberId().isEmpty(), "member of the group: " + gm);
            p.beginTransaction();
            for (ConsumerRecord<String, String> r : got) p.send(new ProducerRecord<>(out, 0, r.key(), r.value().toUpperCase()));
            p.sendOffsetsToTransaction(offs, gm);
            p.flush();
            eq(Map.of(), groupOffsets(group), "no group offsets while the transaction is open");
            eq(Map.of(), stableOffsets(group, inTps), "require_stable offset fetch: both partitions UNSTABLE_OFFSET_COMMIT");
            p.commitTransaction();
            Map<TopicPartition, Long> five = Map.of(inTps.get(0), 5L, inTps.get(1), 5L);
            await(() -> groupOffsets(group).equals(five), 30000, "group offsets 5/5 after the commit",
                () -> groupOffsets(group));
            await(() -> stableOffsets(group, inTps).equals(five), 30000, "require_stable offset fetch: 5/5, stable",
                () -> stableOffsets(group, inTps));
            List<String> want = new ArrayList<>();
            for (int i = 0; i < 10; i++) want.add("V" + i);
            eq(want, sorted(values(readAll(List.of(outTp), "read_committed"))), "output: the 10 transformed records");

            // Round 2, aborted.
            try (KafkaProducer<String, String> plain = producer(null)) {
                for (int i = 10; i < 16; i++) sendAll(plain, inTps.get(i % 2), List.of("v" + i));
            }
            got = pollN(c, 6);
            offs = nextOffsets(got);
            eq(Map.of(inTps.get(0), 8L, inTps.get(1), 8L), plainOffsets(offs), "consumed 6 more");
            p.beginTransaction();
            for (ConsumerRecord<String, String> r : got) p.send(new ProducerRecord<>(out, 0, r.key(), r.value().toUpperCase()));
            p.sendOffsetsToTransaction(offs, c.groupMetadata());
            p.flush();
            eq(Map.of(), stableOffsets(group, inTps), "require_stable offset fetch: unstable again");
            eq(five, groupOffsets(group), "the group's offsets are 5/5 while the transaction is open");
            p.abortTransaction();
            await(() -> stableOffsets(group, inTps).equals(five), 30000, "aborted: the group's offsets are still 5/5, stable",
                () -> stableOffsets(group, inTps));
            eq(want, sorted(values(readAll(List.of(outTp), "read_committed"))), "aborted: output unchanged at read_committed");

            // Round 3: back to the committed offsets, redone and committed.
            Map<TopicPartition, OffsetAndMetadata> back = c.committed(new HashSet<>(inTps), Duration.ofSeconds(30));
            for (TopicPartition tp : inTps) c.seek(tp, back.get(tp).offset());
            got = pollN(c, 6);
            offs = nextOffsets(got);
            p.beginTransaction();
            for (ConsumerRecord<String, String> r : got) p.send(new ProducerRecord<>(out, 0, r.key(), r.value().toUpperCase()));
            p.sendOffsetsToTransaction(offs, c.groupMetadata());
            p.commitTransaction();
            Map<TopicPartition, Long> eight = Map.of(inTps.get(0), 8L, inTps.get(1), 8L);
            await(() -> groupOffsets(group).equals(eight), 30000, "group offsets 8/8 after the redone round",
                () -> groupOffsets(group));
            for (int i = 10; i < 16; i++) want.add("V" + i);
            Collections.sort(want);
            await(() -> lso(List.of(outTp)).equals(hwm(List.of(outTp))), 30000, "output's markers written", () -> lso(List.of(outTp)));
            eq(want, sorted(values(readAll(List.of(outTp), "read_committed"))), "output: each of the 16 transformed records once");
            eq(22, readAll(List.of(outTp), "read_uncommitted").size(), "read_uncommitted: 16 + the 6 aborted");
        }
    }

    static List<ConsumerRecord<String, String>> pollN(KafkaConsumer<String, String> c, int n) {
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 60000;
        while (got.size() < n) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError("consumed " + got.size() + " of " + n);
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r);
        }
        if (got.size() != n) throw new AssertionError("consumed " + got.size() + ", want " + n);
        return got;
    }

    static Map<TopicPartition, OffsetAndMetadata> nextOffsets(List<ConsumerRecord<String, String>> recs) {
        Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
        for (ConsumerRecord<String, String> r : recs)
            m.merge(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1),
                (x, y) -> x.offset() >= y.offset() ? x : y);
        return m;
    }

    static Map<TopicPartition, Long> plainOffsets(Map<TopicPartition, OffsetAndMetadata> m) {
        Map<TopicPartition, Long> out = new HashMap<>();
        m.forEach((tp, om) -> out.put(tp, om.offset()));
        return out;
    }

    /** A plain record produced after an open transaction's first record waits behind it at
     *  read_committed (the last stable offset is that first record's offset) until the
     *  transaction commits. */
    static void lsoScenario(String prefix) throws Exception {
        String t = prefix;
        createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        List<TopicPartition> tps = List.of(tp);
        try (KafkaProducer<String, String> p = producer(prefix + "-txn");
             KafkaProducer<String, String> plain = producer(null)) {
            p.initTransactions();
            p.beginTransaction();
            long held = sendAll(p, tp, List.of("held")).get(0).offset();
            long after = sendAll(plain, tp, List.of("plain")).get(0).offset();
            eq(0L, held, "transactional record at offset 0");
            eq(1L, after, "plain record after it at offset 1");
            eq(Map.of(tp, 0L), lso(tps), "ListOffsets read_committed: the last stable offset is the open transaction's start");
            eq(Map.of(tp, 2L), hwm(tps), "ListOffsets read_uncommitted: the high watermark");
            try (KafkaConsumer<String, String> c = consumer("read_committed", Map.of())) {
                c.assign(tps);
                c.seekToBeginning(tps);
                eq(Map.of(tp, 0L), c.endOffsets(tps), "read_committed consumer's end offset");
                int n = 0;
                long until = System.currentTimeMillis() + 1500;
                while (System.currentTimeMillis() < until) n += c.poll(Duration.ofMillis(300)).count();
                eq(0, n, "read_committed consumer gets nothing while the transaction is open");
                eq(0L, c.position(tp), "and stays at the last stable offset");
            }
            eq(List.of("held", "plain"), values(readAll(tps, "read_uncommitted")), "read_uncommitted sees both");
            p.commitTransaction();
        }
        await(() -> lso(tps).equals(Map.of(tp, 3L)), 30000, "last stable offset past the marker (3)", () -> lso(tps));
        List<ConsumerRecord<String, String>> rc = readAll(tps, "read_committed");
        eq(List.of("held", "plain"), values(rc), "read_committed after the commit: both, in offset order");
        eq(List.of(0L, 1L), rc.stream().map(ConsumerRecord::offset).collect(Collectors.toList()), "at offsets 0 and 1");
    }

    /** The transaction admin APIs on an open, a committed and a fenced transaction. */
    static void adminScenario(String prefix) throws Exception {
        String t = prefix, id = prefix + "-txn";
        createTopic(t, 2);
        List<TopicPartition> tps = partitions(t, 2);
        try (KafkaProducer<String, String> p = producer(id, Map.of("transaction.timeout.ms", "45000"))) {
            p.initTransactions();
            // A committed transaction first: offsets 0-1 and the marker at 2 on each.
            p.beginTransaction();
            for (TopicPartition tp : tps) sendAll(p, tp, List.of("first-0", "first-1"));
            p.commitTransaction();
            await(() -> lso(tps).equals(Map.of(tps.get(0), 3L, tps.get(1), 3L)), 30000, "first transaction's markers", () -> lso(tps));

            long started = System.currentTimeMillis();
            p.beginTransaction();
            Map<TopicPartition, Long> start = new HashMap<>();
            for (TopicPartition tp : tps) start.put(tp, sendAll(p, tp, List.of("open-0", "open-1")).get(0).offset());
            eq(Map.of(tps.get(0), 3L, tps.get(1), 3L), start, "open transaction starts at offset 3 on both partitions");

            TransactionDescription d = describe(id);
            eq(TransactionState.ONGOING, d.state(), "describeTransactions: Ongoing");
            eq(new HashSet<>(tps), d.topicPartitions(), "describeTransactions: its partitions");
            eq(45000L, d.transactionTimeoutMs(), "describeTransactions: its timeout");
            check(d.producerId() >= 0 && d.producerEpoch() >= 0, "describeTransactions: producer " + d.producerId() + " epoch " + d.producerEpoch());
            check(d.transactionStartTimeMs().isPresent()
                && d.transactionStartTimeMs().getAsLong() >= started - 5000
                && d.transactionStartTimeMs().getAsLong() <= System.currentTimeMillis() + 5000,
                "describeTransactions: start time " + d.transactionStartTimeMs());
            check(d.coordinatorId() >= 0, "describeTransactions: coordinator " + d.coordinatorId());

            Map<String, TransactionListing> all = listTxns(new ListTransactionsOptions());
            check(all.containsKey(id), "listTransactions lists it");
            eq(TransactionState.ONGOING, all.get(id).state(), "listTransactions: Ongoing");
            eq(d.producerId(), all.get(id).producerId(), "listTransactions: its producer id");
            check(listTxns(new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING))).containsKey(id),
                "listTransactions(Ongoing) lists it");
            check(!listTxns(new ListTransactionsOptions().filterStates(List.of(TransactionState.COMPLETE_COMMIT))).containsKey(id),
                "listTransactions(CompleteCommit) does not");
            Map<String, TransactionListing> byPid = listTxns(new ListTransactionsOptions().filterProducerIds(List.of(d.producerId())));
            eq(Set.of(id), byPid.keySet(), "listTransactions(producer id) lists only it");

            for (TopicPartition tp : tps) {
                Optional<ProducerState> s = producerOn(tp, d.producerId());
                check(s.isPresent(), "describeProducers " + tp + ": the producer is active");
                eq(d.producerEpoch(), s.get().producerEpoch(), "describeProducers " + tp + ": its epoch");
                eq(OptionalLong.of(3L), s.get().currentTransactionStartOffset(),
                    "describeProducers " + tp + ": current transaction starts at 3");
                check(s.get().lastSequence() >= 0, "describeProducers " + tp + ": last sequence " + s.get().lastSequence());
            }

            p.commitTransaction();
            await(() -> describe(id).state() == TransactionState.COMPLETE_COMMIT, 30000,
                "describeTransactions: CompleteCommit after the commit", () -> describe(id));
            TransactionDescription done = describe(id);
            eq(Set.of(), done.topicPartitions(), "describeTransactions: no partitions once complete");
            eq(d.producerId(), done.producerId(), "same producer id");
            check(listTxns(new ListTransactionsOptions().filterStates(List.of(TransactionState.COMPLETE_COMMIT))).containsKey(id),
                "listTransactions(CompleteCommit) lists it");
            check(!listTxns(new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING))).containsKey(id),
                "listTransactions(Ongoing) no longer does");
            for (TopicPartition tp : tps) {
                Optional<ProducerState> s = producerOn(tp, d.producerId());
                check(s.isPresent(), "describeProducers " + tp + ": still known after the commit");
                eq(OptionalLong.empty(), s.get().currentTransactionStartOffset(), "describeProducers " + tp + ": no open transaction");
            }

            // fenceProducers on a live producer with an open transaction.
            p.beginTransaction();
            sendAll(p, tps.get(0), List.of("fenced"));
            FenceProducersResult fr = admin.fenceProducers(List.of(id));
            fr.all().get();
            check(fr.epochId(id).get() > d.producerEpoch(), "fenceProducers: epoch " + d.producerEpoch() + " -> " + fr.epochId(id).get());
            eq(d.producerId(), fr.producerId(id).get(), "fenceProducers: same producer id");
            expectFenced(p::commitTransaction, "the fenced producer's commit fails");
        }
        await(() -> {
            TransactionState s = describe(id).state();
            return s == TransactionState.COMPLETE_ABORT || s == TransactionState.EMPTY;
        }, 30000, "fenced transaction aborted", () -> describe(id));
        await(() -> lso(tps).equals(hwm(tps)), 30000, "no open transaction on the partitions", () -> lso(tps) + " vs " + hwm(tps));
        Map<TopicPartition, List<String>> want = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        for (TopicPartition tp : tps) want.put(tp, List.of("first-0", "first-1", "open-0", "open-1"));
        eq(want, byPartition(readAll(tps, "read_committed")), "read_committed: the two committed transactions, not the fenced one");

        // A transaction past its timeout, as describeTransactions shows it: CompleteAbort
        // with the epoch bumped (the server looks for expired ones every 200 ms here).
        String expiring = prefix + "-expiring";
        try (KafkaProducer<String, String> p = producer(expiring, Map.of("transaction.timeout.ms", "1000"))) {
            p.initTransactions();
            int epoch = describe(expiring).producerEpoch();
            eq(TransactionState.EMPTY, describe(expiring).state(), "describeTransactions: Empty after initTransactions");
            p.beginTransaction();
            sendAll(p, tps.get(1), List.of("expiring"));
            eq(TransactionState.ONGOING, describe(expiring).state(), "describeTransactions: Ongoing");
            await(() -> describe(expiring).state() == TransactionState.COMPLETE_ABORT, 30000,
                "describeTransactions: CompleteAbort after the timeout", () -> describe(expiring));
            check(describe(expiring).producerEpoch() > epoch, "epoch bumped by the timeout: " + epoch + " -> " + describe(expiring).producerEpoch());
            check(listTxns(new ListTransactionsOptions().filterStates(List.of(TransactionState.COMPLETE_ABORT))).containsKey(expiring),
                "listTransactions(CompleteAbort) lists it");
        }
    }

    /** A transaction past its transaction.timeout.ms is aborted by the coordinator, which
     *  bumps the epoch: the producer's next produce/commit fails. A timeout above the
     *  server's maximum is refused at initTransactions. */
    static void timeout(String prefix, long max) throws Exception {
        String t = prefix, id = prefix + "-txn";
        createTopic(t, 1);
        TopicPartition tp = new TopicPartition(t, 0);
        List<TopicPartition> tps = List.of(tp);
        try (KafkaProducer<String, String> p = producer(id, Map.of("transaction.timeout.ms", "1000"))) {
            p.initTransactions();
            p.beginTransaction();
            long started = System.currentTimeMillis();
            sendAll(p, tp, List.of("expired"));
            eq(Map.of(tp, 0L), lso(tps), "open transaction holds offset 0 back");
            // The abort marker moves the last stable offset past the record.
            await(() -> lso(tps).equals(Map.of(tp, 2L)) && hwm(tps).equals(Map.of(tp, 2L)), 30000,
                "the coordinator aborts the transaction after its 1 s timeout", () -> lso(tps) + " vs " + hwm(tps));
            long took = System.currentTimeMillis() - started;
            check(took >= 900, "not before the timeout: " + took + " ms");
            expectFenced(() -> {
                p.send(new ProducerRecord<>(t, 0, "late", "late"));
                p.commitTransaction();
            }, "the timed-out producer's next produce and commit fail");
        }
        eq(List.of(), values(readAll(tps, "read_committed")), "read_committed: nothing");
        eq(List.of("expired"), values(readAll(tps, "read_uncommitted")), "read_uncommitted: the aborted record, not the late one");

        try (KafkaProducer<String, String> p = producer(prefix + "-long", Map.of("transaction.timeout.ms", String.valueOf(max + 1)))) {
            // INVALID_TRANSACTION_TIMEOUT: the 4.3 client raises a KafkaException with the
            // error's message ("Unexpected error in InitProducerIdResponse; ...").
            Throwable e = failure(p::initTransactions);
            String msg = org.apache.kafka.common.protocol.Errors.INVALID_TRANSACTION_TIMEOUT.message();
            check(e instanceof InvalidTxnTimeoutException || (e instanceof KafkaException && e.getMessage().contains(msg)),
                "a timeout above the server's maximum " + max + " is refused: " + e);
        }
        try (KafkaProducer<String, String> p = producer(prefix + "-max", Map.of("transaction.timeout.ms", String.valueOf(max)))) {
            p.initTransactions();
            check(true, "the maximum itself is accepted");
        }
    }

    /** Before the server's kill -9: a committed transaction with group offsets, then an
     *  open one (records and offsets) left behind by halting without close or abort. */
    static void durablePrepare(String prefix) throws Exception {
        String t = prefix, id = prefix + "-txn", group = prefix + "-g";
        createTopic(t, 2);
        List<TopicPartition> tps = partitions(t, 2);
        KafkaProducer<String, String> p = producer(id);
        // The group's metadata outside any generation (a consumer of the group that has
        // not joined it), as an assign()-based application sends.
        ConsumerGroupMetadata gm;
        try (KafkaConsumer<String, String> c = consumer("read_committed", Map.of("group.id", group))) {
            gm = c.groupMetadata();
        }
        p.initTransactions();
        p.beginTransaction();
        for (TopicPartition tp : tps) sendAll(p, tp, List.of("kept-0", "kept-1"));
        p.sendOffsetsToTransaction(Map.of(tps.get(0), new OffsetAndMetadata(4)), gm);
        p.commitTransaction();
        await(() -> lso(tps).equals(hwm(tps)), 30000, "committed transaction's markers", () -> lso(tps));
        await(() -> groupOffsets(group).equals(Map.of(tps.get(0), 4L)), 30000, "group offset 4 committed",
            () -> groupOffsets(group));
        p.beginTransaction();
        for (TopicPartition tp : tps) sendAll(p, tp, List.of("pending-0", "pending-1"));
        p.sendOffsetsToTransaction(Map.of(tps.get(0), new OffsetAndMetadata(8)), gm);
        eq(Map.of(tps.get(0), 3L, tps.get(1), 3L), lso(tps), "open transaction's records held back from offset 3");
        eq(Map.of(), stableOffsets(group, List.of(tps.get(0))), "and its group offset unstable");
        System.out.println("ok");
        System.out.flush();
        // No close, no abort: the transaction stays open on the server.
        Runtime.getRuntime().halt(0);
    }

    /** After the server's kill -9 and restart, read-only: the transaction coordinator and
     *  the partitions' producer state still show the open transaction. */
    static void durableAdmin(String prefix) throws Exception {
        String t = prefix, id = prefix + "-txn";
        List<TopicPartition> tps = partitions(t, 2);
        TransactionDescription d = describe(id);
        eq(TransactionState.ONGOING, d.state(), "describeTransactions after the restart: still Ongoing");
        eq(new HashSet<>(tps), d.topicPartitions(), "with its two partitions");
        for (TopicPartition tp : tps)
            eq(OptionalLong.of(3L), producerOn(tp, d.producerId()).map(ProducerState::currentTransactionStartOffset).orElse(null),
                "describeProducers " + tp + ": open transaction from offset 3");
        check(listTxns(new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING))).containsKey(id),
            "listTransactions(Ongoing) lists it");
    }

    /** After the server's kill -9 and restart: the committed transaction and its offsets
     *  are there, the open one is still open (records held back, offsets unstable) until
     *  a new producer with its transactional.id aborts it. */
    static void durableCheck(String prefix) throws Exception {
        String t = prefix, id = prefix + "-txn", group = prefix + "-g";
        List<TopicPartition> tps = partitions(t, 2);
        eq(Map.of(tps.get(0), 3L, tps.get(1), 3L), lso(tps), "last stable offsets still 3");
        eq(Map.of(tps.get(0), 5L, tps.get(1), 5L), hwm(tps), "high watermarks 5");
        Map<TopicPartition, List<String>> kept = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
        for (TopicPartition tp : tps) kept.put(tp, List.of("kept-0", "kept-1"));
        eq(kept, byPartition(readAll(tps, "read_committed")), "read_committed: the committed transaction");
        eq(Map.of(tps.get(0), 4L), groupOffsets(group), "group offset: the committed 4");
        eq(Map.of(), stableOffsets(group, List.of(tps.get(0))), "require_stable offset fetch: unstable while the transaction is open");

        try (KafkaProducer<String, String> p = producer(id)) {
            p.initTransactions();
            // Aborted: the markers (offset 5) move the last stable offsets to 6.
            await(() -> lso(tps).equals(Map.of(tps.get(0), 6L, tps.get(1), 6L)), 30000,
                "the open transaction aborted by the new producer", () -> lso(tps) + " vs " + hwm(tps));
            eq(kept, byPartition(readAll(tps, "read_committed")), "read_committed: still only the committed transaction");
            await(() -> stableOffsets(group, List.of(tps.get(0))).equals(Map.of(tps.get(0), 4L)), 30000,
                "group offset: still 4, stable", () -> stableOffsets(group, List.of(tps.get(0))));
            Map<TopicPartition, List<String>> all = new TreeMap<>(Comparator.comparing(TopicPartition::toString));
            for (TopicPartition tp : tps) all.put(tp, List.of("kept-0", "kept-1", "pending-0", "pending-1"));
            eq(all, byPartition(readAll(tps, "read_uncommitted")), "read_uncommitted: the aborted records too");
            p.beginTransaction();
            for (TopicPartition tp : tps) sendAll(p, tp, List.of("after"));
            p.commitTransaction();
        }
        await(() -> lso(tps).equals(hwm(tps)), 30000, "new transaction's markers", () -> lso(tps) + " vs " + hwm(tps));
        for (TopicPartition tp : tps) kept.put(tp, List.of("kept-0", "kept-1", "after"));
        eq(kept, byPartition(readAll(tps, "read_committed")), "read_committed: the new transaction after the committed one");
    }

    public static void main(String[] args) {
        bootstrap = args[0];
        String scenario = args[1], prefix = args[2];
        int code = 0;
        try (Admin a = Admin.create(base())) {
            admin = a;
            switch (scenario) {
                case "commit-abort": commitAbort(prefix); break;
                case "zombie": zombie(prefix); break;
                case "epochs": epochs(prefix, Integer.parseInt(args[3])); break;
                case "ctp": ctp(prefix); break;
                case "lso": lsoScenario(prefix); break;
                case "admin": adminScenario(prefix); break;
                case "timeout": timeout(prefix, Long.parseLong(args[3])); break;
                case "durable-prepare": durablePrepare(prefix); break;
                case "durable-admin": durableAdmin(prefix); break;
                case "durable-check": durableCheck(prefix); break;
                default: throw new IllegalArgumentException("unknown scenario " + scenario);
            }
            System.out.println("ok");
        } catch (Throwable t) {
            System.out.println("FAILED: " + t);
            t.printStackTrace();
            code = 1;
        }
        System.out.flush();
        System.exit(code);
    }
}
