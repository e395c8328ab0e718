//! What a policy check costs per request: the directory's identity decision for a
//! principal with 0, 1, 10 and 100 attached policies (each of 5 statements with wildcard
//! resources and one condition), and one bucket-policy evaluation. The Kafka front end
//! makes one decision per topic of a request and the S3 one per request, so this is the
//! added latency; run `cargo bench -p eddy-iam --bench evaluate`.

use criterion::{Criterion, criterion_group, criterion_main};
use iam::{ConfigUser, Context, Decision, Directory, Policy, PolicyKind, Request};

fn document(i: usize) -> String {
    let statements: Vec<String> = (0..5)
        .map(|s| {
            format!(
                r#"{{"Sid":"s{s}","Effect":"{}","Action":["KafkaRead","KafkaDescribe"],"Resource":"vast:kafka:topic:default:team{i}-{s}-*","Condition":{{"IpAddress":{{"aws:SourceIp":"10.{s}.0.0/16"}}}}}}"#,
                if s == 4 { "Deny" } else { "Allow" }
            )
        })
        .collect();
    format!(
        r#"{{"Version":"2012-10-17","Statement":[{}]}}"#,
        statements.join(",")
    )
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let cx = Context {
        source_ip: Some("10.2.3.4".parse().expect("ip")),
        ..Context::default()
    };
    let req = Request {
        action: "KafkaRead",
        resource: "vast:kafka:topic:default:team7-2-orders",
        principal: Some("bob"),
        context: &cx,
    };
    for n in [0usize, 1, 10, 100] {
        let dir = Directory::in_memory(&[ConfigUser {
            name: "bob".into(),
            s3_secret: "bob-secret".into(),
            kafka_password: "pw".into(),
        }]);
        rt.block_on(async {
            for i in 0..n {
                dir.put_policy(&format!("p{i}"), &document(i), Some(vec!["bob".into()]))
                    .await
                    .expect("policy");
            }
        });
        c.bench_function(&format!("identity_decision/{n}_policies"), |b| {
            b.iter(|| {
                let d = dir.identity_decision(Some("bob"), std::hint::black_box(&req));
                assert!(n < 8 || matches!(d, Decision::Allow));
            })
        });
    }
    let bucket = Policy::parse(
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/public/*"},{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"*","Condition":{"Bool":{"aws:SecureTransport":"false"}}}]}"#,
        PolicyKind::Resource,
    )
    .expect("policy");
    let get = Request {
        action: "s3:GetObject",
        resource: "arn:aws:s3:::photos/public/2026/12/logo.png",
        principal: None,
        context: &cx,
    };
    c.bench_function("bucket_policy/2_statements", |b| {
        b.iter(|| bucket.evaluate(std::hint::black_box(&get)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
