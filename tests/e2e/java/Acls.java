// The Java admin client's ACL calls (createAcls, describeAcls, deleteAcls), driven by
// tests/e2e/test_policies.py, over SASL_PLAINTEXT with SCRAM-SHA-512.
//
//   Acls BOOTSTRAP USER PASSWORD create TOPIC PRINCIPAL OPERATION PERMISSION [prefixed]
//   Acls BOOTSTRAP USER PASSWORD describe TOPIC
//       prints one line per binding: PRINCIPAL OPERATION PERMISSION PATTERN HOST
//   Acls BOOTSTRAP USER PASSWORD delete TOPIC
//       prints the number of bindings deleted.
// Errors print as "error CLASS: MESSAGE".

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

public class Acls {
    public static void main(String[] args) throws Exception {
        Map<String, Object> conf = Map.of(
                "bootstrap.servers", args[0],
                "security.protocol", "SASL_PLAINTEXT",
                "sasl.mechanism", "SCRAM-SHA-512",
                "sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                        + args[1] + "\" password=\"" + args[2] + "\";");
        try (Admin admin = Admin.create(conf)) {
            String topic = args[4];
            AclBindingFilter all = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.ANY),
                    AccessControlEntryFilter.ANY);
            try {
                switch (args[3]) {
                    case "create" -> {
                        PatternType pattern = args.length > 8 && args[8].equals("prefixed") ? PatternType.PREFIXED : PatternType.LITERAL;
                        AclBinding b = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, pattern),
                                new AccessControlEntry(args[5], "*", AclOperation.valueOf(args[6]), AclPermissionType.valueOf(args[7])));
                        admin.createAcls(List.of(b)).all().get();
                        System.out.println("ok");
                    }
                    case "describe" -> {
                        for (AclBinding b : admin.describeAcls(all).values().get()) {
                            AccessControlEntry e = b.entry();
                            System.out.println(e.principal() + " " + e.operation() + " " + e.permissionType() + " "
                                    + b.pattern().patternType() + " " + e.host());
                        }
                    }
                    case "delete" -> System.out.println(admin.deleteAcls(List.of(all)).all().get().size());
                    default -> throw new IllegalArgumentException(args[3]);
                }
            } catch (ExecutionException e) {
                System.out.println("error " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
            }
        }
    }
}
