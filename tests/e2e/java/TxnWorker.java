// The transactional producers of the Jepsen-style checker (tests/e2e/txn_checker.py)
// written with the Java client, which speaks KIP-890's transaction version 2 where the
// broker offers it: every commit and abort bumps the producer's epoch, partitions and
// groups join a transaction by its produce. One thread per transactional id writes
// transactions of unique values to random partitions and commits or aborts each at
// random, as the Python producers do; a failed producer is closed and a new one with the
// same transactional.id takes over (its initTransactions fences the old one and aborts
// what it left open).
//
// It reports each step as a JSON line on stdout, which the checker turns into its
// history: begin, write (before the send), delivered (the broker's offset), commit-asked,
// acked (commitTransaction returned), aborted (abortTransaction returned, or the
// transaction failed before its commit was asked), failed (after its commit was asked:
// uncertain), error (by call and exception class), done. It stops when stdin says
// "stop" (or closes): each thread then runs a last initTransactions, so nothing of its
// id stays open.
//
//   java TxnWorker BOOTSTRAP RUN PRODUCERS TOPIC:N[,TOPIC:N...] SEED COMMIT_RATIO
//        WRITES_MIN WRITES_MAX PARTS_MIN PARTS_MAX TXN_TIMEOUT_MS

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnWorker {
    static final AtomicBoolean stopping = new AtomicBoolean();
    static String bootstrap, run;
    static List<TopicPartition> tps = new ArrayList<>();
    static long seed;
    static double commitRatio;
    static int writesMin, writesMax, partsMin, partsMax, txnTimeoutMs;

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String q(String s) {
        return '"' + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + '"';
    }

    static void event(String ev, int p, int t, String more) {
        emit("{\"ev\":" + q(ev) + ",\"p\":" + p + ",\"t\":" + t + (more.isEmpty() ? "" : "," + more) + "}");
    }

    static void error(int p, String call, Throwable e) {
        Throwable c = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
        emit("{\"ev\":\"error\",\"p\":" + p + ",\"call\":" + q(call) + ",\"name\":" + q(c.getClass().getSimpleName())
                + ",\"message\":" + q(String.valueOf(c.getMessage())) + "}");
    }

    static KafkaProducer<byte[], byte[]> producer(int idx) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", "jepsen-" + run + "-" + idx);
        p.put("client.id", "jepsen-java-p" + idx);
        p.put("transaction.timeout.ms", txnTimeoutMs);
        p.put("linger.ms", 2);
        // Back in time after a kill: the defaults wait up to a second between tries.
        p.put("reconnect.backoff.ms", 50);
        p.put("reconnect.backoff.max.ms", 500);
        p.put("retry.backoff.ms", 50);
        p.put("retry.backoff.max.ms", 500);
        p.put("request.timeout.ms", 10000);
        p.put("delivery.timeout.ms", 30000);
        p.put("max.block.ms", 30000);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    /** A producer past initTransactions, or null after 60 s of failures. */
    static KafkaProducer<byte[], byte[]> ready(int idx) {
        long deadline = System.currentTimeMillis() + 60000;
        while (System.currentTimeMillis() < deadline) {
            KafkaProducer<byte[], byte[]> p = producer(idx);
            try {
                p.initTransactions();
                return p;
            } catch (KafkaException e) {
                error(idx, "initTransactions", e);
                p.close(Duration.ZERO);
                sleep(100);
            }
        }
        return null;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** One transaction; returns normally once it is acked or aborted, throws otherwise
     *  (having reported how far it got). */
    static void transaction(KafkaProducer<byte[], byte[]> p, int idx, int t, Random rng, boolean[] commitAsked) throws Exception {
        p.beginTransaction();
        int count = writesMin + rng.nextInt(writesMax - writesMin + 1);
        int parts = Math.min(tps.size(), partsMin + rng.nextInt(partsMax - partsMin + 1));
        List<TopicPartition> shuffled = new ArrayList<>(tps);
        Collections.shuffle(shuffled, rng);
        List<TopicPartition> chosen = shuffled.subList(0, parts);
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            TopicPartition tp = chosen.get(i % chosen.size());
            String value = run + "/p" + idx + "/t" + t + "/i" + i;
            event("write", idx, t, "\"v\":" + q(value) + ",\"topic\":" + q(tp.topic()) + ",\"partition\":" + tp.partition());
            byte[] key = ("p" + idx + "/t" + t).getBytes();
            sent.add(p.send(new ProducerRecord<>(tp.topic(), tp.partition(), key, value.getBytes()), (md, e) -> {
                if (e == null) {
                    event("delivered", idx, t, "\"v\":" + q(value) + ",\"topic\":" + q(md.topic()) + ",\"partition\":"
                            + md.partition() + ",\"offset\":" + md.offset());
                }
            }));
        }
        p.flush();
        for (Future<RecordMetadata> f : sent) f.get();
        if (rng.nextDouble() < commitRatio) {
            commitAsked[0] = true;
            event("commit-asked", idx, t, "");
            p.commitTransaction();
            event("acked", idx, t, "");
        } else {
            p.abortTransaction();
            event("aborted", idx, t, "");
        }
    }

    static void producerLoop(int idx) {
        Random rng = new Random(seed * 1000 + idx);
        KafkaProducer<byte[], byte[]> p = null;
        int number = 0;
        while (!stopping.get()) {
            if (p == null) {
                p = ready(idx);
                if (p == null) {
                    emit("{\"ev\":\"stuck\",\"p\":" + idx + ",\"what\":\"initTransactions failed for 60 s\"}");
                    return;
                }
            }
            int t = number++;
            event("begin", idx, t, "");
            boolean[] commitAsked = {false};
            try {
                transaction(p, idx, t, rng, commitAsked);
            } catch (Exception e) {
                error(idx, "transaction", e);
                event(commitAsked[0] ? "failed" : "aborted", idx, t, "\"error\":" + q(String.valueOf(e)));
                // Whatever failed, a new producer with the same id fences this one and
                // aborts what it left open: the checker allows either fate for a commit
                // that did not return.
                p.close(Duration.ZERO);
                p = null;
            }
        }
        if (p == null) p = ready(idx);
        if (p == null) {
            emit("{\"ev\":\"stuck\",\"p\":" + idx + ",\"what\":\"the last initTransactions never succeeded\"}");
            return;
        }
        p.close();
        emit("{\"ev\":\"done\",\"p\":" + idx + "}");
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        run = args[1];
        int producers = Integer.parseInt(args[2]);
        for (String spec : args[3].split(",")) {
            String[] tn = spec.split(":");
            for (int i = 0; i < Integer.parseInt(tn[1]); i++) tps.add(new TopicPartition(tn[0], i));
        }
        seed = Long.parseLong(args[4]);
        commitRatio = Double.parseDouble(args[5]);
        writesMin = Integer.parseInt(args[6]);
        writesMax = Integer.parseInt(args[7]);
        partsMin = Integer.parseInt(args[8]);
        partsMax = Integer.parseInt(args[9]);
        txnTimeoutMs = Integer.parseInt(args[10]);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < producers; i++) {
            int idx = i;
            Thread th = new Thread(() -> producerLoop(idx), "jepsen-p" + idx);
            th.start();
            threads.add(th);
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
        }
        stopping.set(true);
        for (Thread th : threads) th.join();
        System.exit(0);
    }
}
