// The Java admin client's cluster tools against Eddy (kafka-clients 4.x): describeTopics
// (DescribeTopicPartitions since 3.8, paged), describeLogDirs, electLeaders,
// listPartitionReassignments and alterPartitionReassignments. Prints one line per check
// and exits non-zero on the first mismatch.
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.errors.*;

public class AdminTools {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("FAILED: " + what);
            System.exit(1);
        }
        System.out.println("ok " + what);
    }

    static Throwable cause(KafkaFuture<?> f) throws InterruptedException {
        try {
            f.get();
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            // 2,500 partitions: more than one DescribeTopicPartitions page (2,000).
            admin.createTopics(List.of(new NewTopic(topic, 2500, (short) 1))).all().get();
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            check(d.partitions().size() == 2500, "describeTopics pages through 2500 partitions");
            for (int i = 0; i < d.partitions().size(); i++) {
                TopicPartitionInfo pi = d.partitions().get(i);
                if (pi.partition() != i || pi.leader() == null || pi.replicas().size() != 1) {
                    check(false, "partition " + i + " described: " + pi);
                }
            }
            check(d.topicId() != null && !d.topicId().equals(Uuid.ZERO_UUID), "topic id");
            Throwable unknown = cause(admin.describeTopics(List.of(topic + "-missing")).allTopicNames());
            check(unknown instanceof UnknownTopicOrPartitionException, "unknown topic: " + unknown);

            // Each node lists the partitions it leads; together, every partition once.
            Map<Integer, Map<String, LogDirDescription>> dirs =
                admin.describeLogDirs(List.of(0, 1)).allDescriptions().get();
            Set<TopicPartition> seen = new HashSet<>();
            long listed = 0;
            for (int node : List.of(0, 1)) {
                long mine = 0;
                for (LogDirDescription ld : dirs.get(node).values()) {
                    for (TopicPartition tp : ld.replicaInfos().keySet()) {
                        if (!tp.topic().equals(topic)) continue;
                        mine++;
                        seen.add(tp);
                        int lead = d.partitions().get(tp.partition()).leader().id();
                        if (lead != node) check(false, tp + " listed by " + node + ", led by " + lead);
                    }
                }
                check(mine > 0, "node " + node + " lists " + mine + " partitions");
                listed += mine;
            }
            check(listed == 2500 && seen.size() == 2500, "describeLogDirs: every partition once");

            TopicPartition p0 = new TopicPartition(topic, 0);
            Map<TopicPartition, Optional<Throwable>> elected =
                admin.electLeaders(ElectionType.PREFERRED, Set.of(p0)).partitions().get();
            check(elected.get(p0).isPresent() && elected.get(p0).get() instanceof ElectionNotNeededException,
                "electLeaders: election not needed");

            check(admin.listPartitionReassignments().reassignments().get().isEmpty(),
                "no reassignment in progress");
            int leader = d.partitions().get(0).leader().id();
            int other = leader == 0 ? 1 : 0;
            Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
            moves.put(p0, Optional.of(new NewPartitionReassignment(List.of(other, leader))));
            Throwable refused = cause(admin.alterPartitionReassignments(moves).values().get(p0));
            check(refused instanceof InvalidReplicaAssignmentException, "a move is refused: " + refused);
            moves.put(p0, Optional.of(new NewPartitionReassignment(List.of(leader))));
            check(cause(admin.alterPartitionReassignments(moves).values().get(p0)) == null,
                "a reassignment to the leader alone is already done");
            moves.put(p0, Optional.empty());
            Throwable cancel = cause(admin.alterPartitionReassignments(moves).values().get(p0));
            check(cancel instanceof NoReassignmentInProgressException, "cancelling: " + cancel);
            admin.deleteTopics(List.of(topic)).all().get();
        }
        System.out.println("ok");
    }
}
