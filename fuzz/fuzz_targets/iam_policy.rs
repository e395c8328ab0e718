//! Policy documents come from clients (PutBucketPolicy bodies, the admin API, Kafka's
//! CreateAcls through the ACL policies): parsing must refuse bad ones with an error and
//! never panic, a parsed document must survive `to_json` and parse back the same, and
//! evaluating it against any request must not panic. Run:
//! `cargo fuzz run iam_policy fuzz/corpus/iam_policy`.
#![no_main]

use iam::{Context, Policy, PolicyKind, Request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let context = Context {
        source_ip: Some("10.1.2.3".parse().expect("ip")),
        ..Context::default()
    };
    for kind in [PolicyKind::Identity, PolicyKind::Resource] {
        let Ok(policy) = Policy::parse(text, kind) else {
            continue;
        };
        let again = Policy::parse(&policy.to_json().to_string(), kind).expect("round trip");
        assert_eq!(again.statements, policy.statements);
        for (action, resource) in [
            ("s3:GetObject", "arn:aws:s3:::photos/public/a.png"),
            ("KafkaRead", "vast:kafka:topic:default:orders"),
        ] {
            for principal in [None, Some("bob")] {
                let _ = policy.evaluate(&Request {
                    action,
                    resource,
                    principal,
                    context: &context,
                });
            }
        }
    }
});
