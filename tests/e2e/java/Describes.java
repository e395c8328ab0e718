// The Java admin client's describe calls a policy must guard like the others, driven by
// tests/e2e/test_policies.py as a SASL user (SCRAM-SHA-512): each prints one line, "ok" or
// the exception's class name.
//
//   Describes BOOTSTRAP USER PASSWORD TOPIC GROUP
//       producers    describeProducers of TOPIC's partition 0  (KafkaRead on the topic)
//       logdirs      describeLogDirs of broker 0               (KafkaDescribe on the cluster)
//       quotas       describeClientQuotas, every entity        (KafkaDescribe on the cluster)
//       group        describeConsumerGroups of GROUP           (KafkaDescribe on the group)

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.quota.ClientQuotaFilter;

public class Describes {
    public static void main(String[] args) throws Exception {
        Map<String, Object> conf = Map.of(
                "bootstrap.servers", args[0],
                "security.protocol", "SASL_PLAINTEXT",
                "sasl.mechanism", "SCRAM-SHA-512",
                "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                        + args[1] + "\" password=\"" + args[2] + "\";",
                "default.api.timeout.ms", "30000",
                "request.timeout.ms", "20000");
        String topic = args[3], group = args[4];
        try (Admin admin = Admin.create(conf)) {
            report("producers", () -> admin.describeProducers(List.of(new TopicPartition(topic, 0)))
                    .partitionResult(new TopicPartition(topic, 0)).get());
            report("logdirs", () -> admin.describeLogDirs(List.of(0)).allDescriptions().get());
            report("quotas", () -> admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get());
            report("group", () -> admin.describeConsumerGroups(List.of(group)).all().get());
        }
    }

    interface Call {
        Object run() throws Exception;
    }

    static void report(String what, Call call) {
        try {
            call.run();
            System.out.println(what + " ok");
        } catch (ExecutionException e) {
            System.out.println(what + " " + e.getCause().getClass().getSimpleName());
        } catch (Exception e) {
            System.out.println(what + " " + e.getClass().getSimpleName());
        }
    }
}
