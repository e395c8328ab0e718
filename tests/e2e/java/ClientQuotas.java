// The Java admin client's client-quota calls (KIP-546), driven by tests/e2e/test_quotas.py.
//
//   ClientQuotas BOOTSTRAP alter ENTITY OP...
//       ENTITY is TYPE=NAME[,TYPE=NAME] (NAME <default> for the default); each OP is
//       KEY=VALUE, or KEY=- to remove it. Prints "ok" or the error's class and message.
//   ClientQuotas BOOTSTRAP describe [strict] [TYPE | TYPE=NAME]...
//       prints one JSON line per entity: {"entity": {...}, "values": {...}}.

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;

public class ClientQuotas {
    static final String DEFAULT = "<default>";

    public static void main(String[] args) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            switch (args[1]) {
                case "alter" -> alter(admin, args);
                case "describe" -> describe(admin, args);
                default -> throw new IllegalArgumentException(args[1]);
            }
        }
    }

    static ClientQuotaEntity entity(String spec) {
        Map<String, String> parts = new HashMap<>();
        for (String part : spec.split(",")) {
            String[] kv = part.split("=", 2);
            parts.put(kv[0], DEFAULT.equals(kv[1]) ? null : kv[1]);
        }
        return new ClientQuotaEntity(parts);
    }

    static void alter(Admin admin, String[] args) throws Exception {
        List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            ops.add(new ClientQuotaAlteration.Op(kv[0], "-".equals(kv[1]) ? null : Double.parseDouble(kv[1])));
        }
        try {
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity(args[2]), ops))).all().get();
            System.out.println("ok");
        } catch (ExecutionException e) {
            System.out.println(e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
        }
    }

    static String quote(String s) {
        return s == null ? "null" : "\"" + s.replace("\"", "\\\"") + "\"";
    }

    static void describe(Admin admin, String[] args) throws Exception {
        boolean strict = false;
        List<ClientQuotaFilterComponent> components = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            if (args[i].equals("strict")) {
                strict = true;
            } else if (!args[i].contains("=")) {
                components.add(ClientQuotaFilterComponent.ofEntityType(args[i]));
            } else {
                String[] kv = args[i].split("=", 2);
                components.add(DEFAULT.equals(kv[1])
                        ? ClientQuotaFilterComponent.ofDefaultEntity(kv[0])
                        : ClientQuotaFilterComponent.ofEntity(kv[0], kv[1]));
            }
        }
        ClientQuotaFilter filter = strict ? ClientQuotaFilter.containsOnly(components) : ClientQuotaFilter.contains(components);
        Map<ClientQuotaEntity, Map<String, Double>> all = admin.describeClientQuotas(filter).entities().get();
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : all.entrySet()) {
            StringBuilder entity = new StringBuilder();
            for (Map.Entry<String, String> p : new TreeMap<>(e.getKey().entries()).entrySet()) {
                entity.append(entity.length() == 0 ? "" : ",").append(quote(p.getKey())).append(":").append(quote(p.getValue()));
            }
            StringBuilder values = new StringBuilder();
            for (Map.Entry<String, Double> v : new TreeMap<>(e.getValue()).entrySet()) {
                values.append(values.length() == 0 ? "" : ",").append(quote(v.getKey())).append(":").append(v.getValue());
            }
            System.out.println("{\"entity\":{" + entity + "},\"values\":{" + values + "}}");
        }
    }
}
