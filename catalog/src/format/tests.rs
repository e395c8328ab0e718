//! Formats 1 to 13 are frozen: format 1's types encode, byte for byte, what the build of
//! 2026-11-30 wrote for the same values (`v1.golden`: `samples.rs` compiled against commit
//! c8a8f6c printed them), format 2's to 13's what the builds that introduced them wrote
//! (`v2.golden` to `v13.golden`), and all read back into the same live values. Refusals of
//! newer formats, and what adding a field later looks like.

use super::*;
use crate::apply::dec;
use crate::domain::{S3Op, TxnOp};
use crate::txn::Transaction;
use storage::StorageError;

include!("samples.rs");

/// `v1.golden` as (name, bytes).
fn golden() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v1.golden"))
}

/// `v2.golden` as (name, bytes).
fn golden_v2() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v2.golden"))
}

/// `v4.golden` as (name, bytes).
fn golden_v4() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v4.golden"))
}

/// `v6.golden` as (name, bytes).
fn golden_v6() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v6.golden"))
}

/// `v7.golden` as (name, bytes).
fn golden_v7() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v7.golden"))
}

/// `v8.golden` as (name, bytes).
fn golden_v8() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v8.golden"))
}

/// `v9.golden` as (name, bytes).
fn golden_v9() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v9.golden"))
}

/// `v10.golden` as (name, bytes).
fn golden_v10() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v10.golden"))
}

/// `v12.golden` as (name, bytes).
fn golden_v12() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v12.golden"))
}

/// `v13.golden` as (name, bytes).
fn golden_v13() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v13.golden"))
}

/// `v11.golden` as (name, bytes).
fn golden_v11() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v11.golden"))
}

/// A format-1 encoding of a type format 8 re-encoded, read as the store's migration
/// reads it.
fn dec_v1<F: serde::de::DeserializeOwned, L: From<F>>(bytes: &[u8]) -> L {
    L::from(postcard::from_bytes::<F>(bytes).unwrap())
}

/// `v5.golden` as (name, bytes).
fn golden_v5() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v5.golden"))
}

/// `v3.golden` as (name, bytes).
fn golden_v3() -> Vec<(String, Vec<u8>)> {
    parse_golden(include_str!("v3.golden"))
}

fn parse_golden(text: &str) -> Vec<(String, Vec<u8>)> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, hex) = l.rsplit_once(' ').expect("name and hex");
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                .collect();
            (name.to_string(), bytes)
        })
        .collect()
}

fn golden_bytes(name: &str) -> Vec<u8> {
    golden()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} is not in v1.golden"))
        .1
}

#[test]
fn this_build_writes_format_1_byte_for_byte() {
    let golden = golden();
    for (name, bytes) in encoded_samples() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v1.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 1");
    }
}

#[test]
fn this_build_writes_format_2_byte_for_byte() {
    let golden = golden_v2();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v2() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v2.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 2");
    }
}

#[test]
fn format_2_records_decode_into_the_live_ops() {
    let bytes = |name: &str| {
        golden_v2()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v2.golden"))
            .1
    };
    let txns = crate::record::decode(1, 2, bytes("record CompactPartition")).unwrap();
    assert_eq!(txns, vec![Transaction::new(vec![sample_compact()])]);
    let mut all: Vec<Op> = sample_ops().into_iter().map(|(_, op)| op).collect();
    all.push(sample_compact());
    let txns = crate::record::decode(1, 2, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all)]);
    assert_eq!(
        dec::<crate::model::CompactionState>(&bytes("value CompactionState")).unwrap(),
        sample_compaction()
    );
}

#[test]
fn this_build_writes_format_3_byte_for_byte() {
    let golden = golden_v3();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v3() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v3.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 3");
    }
}

#[test]
fn format_3_records_decode_into_the_live_ops() {
    let bytes = |name: &str| {
        golden_v3()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v3.golden"))
            .1
    };
    for (name, op) in sample_expansion_ops() {
        let txns = crate::record::decode(1, 3, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 3, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v3())]);
    assert_eq!(
        dec::<crate::model::Expansion>(&bytes("value Expansion")).unwrap(),
        sample_expansion()
    );
    assert_eq!(
        dec::<crate::model::TableRecord>(&bytes("value TableRecord")).unwrap(),
        sample_table_record()
    );
}

#[test]
fn this_build_writes_format_4_byte_for_byte() {
    let golden = golden_v4();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v4() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v4.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 4");
    }
}

#[test]
fn format_4_records_decode_into_the_live_ops() {
    let bytes = |name: &str| {
        golden_v4()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v4.golden"))
            .1
    };
    for (name, op) in sample_txn_ops() {
        let txns = crate::record::decode(1, 4, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 4, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v4())]);
    // The first format-4 builds wrote the same ops but DropTxn, which 29839f8 added.
    let before: Vec<Op> = all_ops_v4()
        .into_iter()
        .filter(|op| !matches!(op, Op::Txn(TxnOp::DropTxn { .. })))
        .collect();
    let txns = crate::record::decode(1, 4, bytes("record all-before-DropTxn")).unwrap();
    assert_eq!(txns, vec![Transaction::new(before)]);
    assert_eq!(
        dec::<crate::model::TxnRecord>(&bytes("value TxnRecord")).unwrap(),
        sample_txn_record()
    );
    assert_eq!(
        dec::<crate::model::TxnPartition>(&bytes("value TxnPartition")).unwrap(),
        sample_txn_partition()
    );
    assert_eq!(
        dec::<crate::model::AbortedTxn>(&bytes("value AbortedTxn")).unwrap(),
        sample_aborted_txn()
    );
}

#[test]
fn this_build_writes_format_5_byte_for_byte() {
    let golden = golden_v5();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v5() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v5.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 5");
    }
}

#[test]
fn format_5_records_decode_into_the_live_ops() {
    let bytes = |name: &str| {
        golden_v5()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v5.golden"))
            .1
    };
    for (name, op) in sample_quota_ops() {
        let txns = crate::record::decode(1, 5, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 5, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v5())]);
    assert_eq!(
        dec::<crate::model::ClientQuotas>(&bytes("value ClientQuotas")).unwrap(),
        sample_quotas()
    );
}

#[test]
fn this_build_writes_format_6_byte_for_byte() {
    let golden = golden_v6();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v6() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v6.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 6");
    }
}

#[test]
fn format_6_records_decode_into_the_live_ops() {
    let bytes = |name: &str| {
        golden_v6()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v6.golden"))
            .1
    };
    for (name, op) in sample_iam_ops() {
        let txns = crate::record::decode(1, 6, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 6, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v6())]);
    assert_eq!(
        dec::<crate::model::UserRecord>(&bytes("value UserRecord")).unwrap(),
        sample_user()
    );
    assert_eq!(
        dec::<crate::model::PolicyRecord>(&bytes("value PolicyRecord")).unwrap(),
        sample_policy()
    );
    assert_eq!(
        dec::<crate::model::BucketPolicy>(&bytes("value BucketPolicy")).unwrap(),
        sample_bucket_policy()
    );
}

#[test]
fn this_build_writes_format_7_byte_for_byte() {
    let golden = golden_v7();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v7() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v7.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 7");
    }
}

#[test]
fn format_7_records_decode_into_the_live_ops() {
    let bytes = |name: &str| {
        golden_v7()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v7.golden"))
            .1
    };
    for (name, op) in sample_bucket_config_ops() {
        let txns = crate::record::decode(1, 7, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 7, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v7())]);
    assert_eq!(
        dec::<crate::model::BucketConfig>(&bytes("value BucketConfig")).unwrap(),
        sample_bucket_config()
    );
}

#[test]
fn this_build_writes_format_8_byte_for_byte() {
    let golden = golden_v8();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v8() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v8.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 8");
    }
}

#[test]
fn format_8_records_and_values_decode_into_the_live_types() {
    let bytes = |name: &str| {
        golden_v8()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v8.golden"))
            .1
    };
    for (name, op) in sample_lock_ops() {
        let txns = crate::record::decode(1, 8, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 8, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v8())]);
    assert_eq!(
        dec::<ObjectVersion>(&bytes("value ObjectVersion")).unwrap(),
        sample_version_v8()
    );
    assert_eq!(
        dec::<ObjectVersion>(&bytes("value ObjectVersion plain")).unwrap(),
        sample_version()
    );
    assert_eq!(
        dec::<ObjectVersion>(&bytes("value ObjectVersionInline")).unwrap(),
        sample_inline_version()
    );
    assert_eq!(
        dec::<UploadRecord>(&bytes("value UploadRecord")).unwrap(),
        sample_upload_v8()
    );
}

#[test]
fn this_build_writes_format_9_byte_for_byte() {
    let golden = golden_v9();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v9() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v9.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 9");
    }
}

#[test]
fn format_9_records_and_values_decode_into_the_live_types() {
    let bytes = |name: &str| {
        golden_v9()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v9.golden"))
            .1
    };
    for (name, op) in sample_pipeline_ops() {
        let txns = crate::record::decode(1, 9, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 9, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v9())]);
    assert_eq!(
        dec::<crate::model::PipelineRecord>(&bytes("value PipelineRecord")).unwrap(),
        sample_pipeline()
    );
    assert_eq!(
        dec::<crate::model::PipelinePosition>(&bytes("value PipelinePosition")).unwrap(),
        crate::model::PipelinePosition { next: 42 }
    );
}

#[test]
fn this_build_writes_format_10_byte_for_byte() {
    let golden = golden_v10();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v10() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v10.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 10");
    }
}

#[test]
fn format_10_records_and_values_decode_into_the_live_types() {
    let bytes = |name: &str| {
        golden_v10()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v10.golden"))
            .1
    };
    for (name, op) in sample_user_table_ops() {
        let txns = crate::record::decode(1, 10, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 10, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v10())]);
    assert_eq!(
        dec::<crate::model::NamespaceRecord>(&bytes("value NamespaceRecord")).unwrap(),
        sample_namespace()
    );
}

#[test]
fn this_build_writes_format_11_byte_for_byte() {
    let golden = golden_v11();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v11() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v11.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 11");
    }
}

#[test]
fn format_11_records_and_values_decode_into_the_live_types() {
    let bytes = |name: &str| {
        golden_v11()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v11.golden"))
            .1
    };
    for (name, op) in sample_acl_ops() {
        let txns = crate::record::decode(1, 11, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 11, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v11())]);
    assert_eq!(
        dec::<ObjectVersion>(&bytes("value ObjectVersion")).unwrap(),
        sample_version_v11()
    );
    assert_eq!(
        dec::<UploadRecord>(&bytes("value UploadRecord")).unwrap(),
        sample_upload_v11()
    );
    // A format-8 value (no ACL entry) still reads as having none.
    let v8 = golden_v8()
        .into_iter()
        .find(|(n, _)| n.starts_with("value ObjectVersion"))
        .expect("v8.golden has an object version")
        .1;
    assert_eq!(dec::<ObjectVersion>(&v8).unwrap().acl, None);
}

#[test]
fn this_build_writes_format_12_byte_for_byte() {
    let golden = golden_v12();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v12() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v12.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 12");
    }
}

#[test]
fn format_12_records_and_values_decode_into_the_live_types() {
    let bytes = |name: &str| {
        golden_v12()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v12.golden"))
            .1
    };
    for (name, op) in sample_schema_ops() {
        let txns = crate::record::decode(1, 12, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 12, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v12())]);
    assert_eq!(
        dec::<SchemaRecord>(&bytes("value SchemaRecord")).unwrap(),
        sample_schema()
    );
    assert_eq!(
        dec::<SubjectRecord>(&bytes("value SubjectRecord")).unwrap(),
        sample_subject()
    );
}

#[test]
fn this_build_writes_format_13_byte_for_byte() {
    let golden = golden_v13();
    assert!(!golden.is_empty());
    for (name, bytes) in encoded_samples_v13() {
        let want = golden
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name} is not in v13.golden"));
        assert_eq!(bytes, want.1, "{name} no longer encodes as format 13");
    }
}

#[test]
fn format_13_records_and_values_decode_into_the_live_types() {
    let bytes = |name: &str| {
        golden_v13()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in v13.golden"))
            .1
    };
    for (name, op) in sample_share_state_ops() {
        let txns = crate::record::decode(1, 13, bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let txns = crate::record::decode(1, 13, bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all_ops_v13())]);
    assert_eq!(
        dec::<ShareStateRecord>(&bytes("value ShareStateRecord")).unwrap(),
        sample_share_state()
    );
}

/// Prints `v13.golden`'s lines; run once, by the build that introduced format 13, and
/// never again (`cargo test -p eddy-catalog print_format_13 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_13() {
    for (name, bytes) in encoded_samples_v13() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v12.golden`'s lines; run once, by the build that introduced format 12, and
/// never again (`cargo test -p eddy-catalog print_format_12 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_12() {
    for (name, bytes) in encoded_samples_v12() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v11.golden`'s lines; run once, by the build that introduced format 11, and
/// never again (`cargo test -p eddy-catalog print_format_11 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_11() {
    for (name, bytes) in encoded_samples_v11() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v10.golden`'s lines; run once, by the build that introduced format 10, and
/// never again (`cargo test -p eddy-catalog print_format_10 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_10() {
    for (name, bytes) in encoded_samples_v10() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v9.golden`'s lines; run once, by the build that introduced format 9, and
/// never again (`cargo test -p eddy-catalog print_format_9 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_9() {
    for (name, bytes) in encoded_samples_v9() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v8.golden`'s lines; run once, by the build that introduced format 8, and
/// never again (`cargo test -p eddy-catalog print_format_8 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_8() {
    for (name, bytes) in encoded_samples_v8() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v7.golden`'s lines; run once, by the build that introduced format 7, and
/// never again (`cargo test -p eddy-catalog print_format_7 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_7() {
    for (name, bytes) in encoded_samples_v7() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v6.golden`'s lines; run once, by the build that introduced format 6, and
/// never again (`cargo test -p eddy-catalog print_format_6 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_6() {
    for (name, bytes) in encoded_samples_v6() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v5.golden`'s lines; run once, by the build that introduced format 5, and
/// never again (`cargo test -p eddy-catalog print_format_5 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_5() {
    for (name, bytes) in encoded_samples_v5() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v4.golden`'s lines; run once, by the build that introduced format 4, and
/// never again (`cargo test -p eddy-catalog print_format_4 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_4() {
    for (name, bytes) in encoded_samples_v4() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v3.golden`'s lines; run once, by the build that introduced format 3, and
/// never again (`cargo test -p eddy-catalog print_format_3 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_3() {
    for (name, bytes) in encoded_samples_v3() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

/// Prints `v2.golden`'s lines; run once, by the build that introduced format 2, and
/// never again (`cargo test -p eddy-catalog print_format_2 -- --ignored --nocapture`).
#[test]
#[ignore]
fn print_format_2() {
    for (name, bytes) in encoded_samples_v2() {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("{name} {hex}");
    }
}

#[test]
fn format_1_records_decode_into_the_live_ops() {
    for (name, op) in sample_ops() {
        let txns = crate::record::decode(1, 1, golden_bytes(&format!("record {name}"))).unwrap();
        assert_eq!(txns, vec![Transaction::new(vec![op])], "{name}");
    }
    let all: Vec<Op> = sample_ops().into_iter().map(|(_, op)| op).collect();
    let txns = crate::record::decode(1, 1, golden_bytes("record all")).unwrap();
    assert_eq!(txns, vec![Transaction::new(all)]);
}

#[test]
fn format_1_update_bucket_replays_as_a_replace_of_the_same_record() {
    let txns = crate::record::decode(1, 1, golden_bytes("record UpdateBucket")).unwrap();
    assert_eq!(
        txns,
        vec![Transaction::new(vec![Op::S3(S3Op::ReplaceBucket {
            expected: sample_bucket(),
            record: sample_bucket(),
        })])]
    );
}

#[test]
fn format_1_values_decode_into_the_live_records() {
    assert_eq!(
        dec::<BucketRecord>(&golden_bytes("value BucketRecord")).unwrap(),
        sample_bucket()
    );
    assert_eq!(
        dec_v1::<v1::ObjectVersion, ObjectVersion>(&golden_bytes("value ObjectVersion")),
        sample_version()
    );
    assert_eq!(
        dec_v1::<v1::ObjectVersion, ObjectVersion>(&golden_bytes("value ObjectVersionInline")),
        sample_inline_version()
    );
    assert_eq!(
        dec_v1::<v1::UploadRecord, UploadRecord>(&golden_bytes("value UploadRecord")),
        sample_upload()
    );
    assert_eq!(
        dec::<PartRecord>(&golden_bytes("value PartRecord")).unwrap(),
        sample_part()
    );
    assert_eq!(
        dec::<TopicRecord>(&golden_bytes("value TopicRecord")).unwrap(),
        sample_topic()
    );
    assert_eq!(
        dec::<PartitionState>(&golden_bytes("value PartitionState")).unwrap(),
        sample_partition()
    );
    assert_eq!(
        dec::<ProducerState>(&golden_bytes("value ProducerState")).unwrap(),
        sample_producer()
    );
    assert_eq!(
        dec::<OffsetRecord>(&golden_bytes("value OffsetRecord")).unwrap(),
        sample_offset()
    );
    assert_eq!(
        dec::<GroupRecord>(&golden_bytes("value GroupRecord")).unwrap(),
        sample_group()
    );
    assert_eq!(
        dec::<TopicTable>(&golden_bytes("value TopicTable")).unwrap(),
        sample_table()
    );
    let ptr = dec::<CheckpointPointer>(&golden_bytes("value CheckpointPointer")).unwrap();
    assert_eq!((ptr.lsn, ptr.blob), (12_345, blob(3, 4)));
}

#[test]
fn newer_formats_are_refused_naming_both_versions() {
    let err = crate::record::decode(14, 14, golden_bytes("record all")).unwrap_err();
    assert!(
        matches!(
            &err,
            CatalogError::Storage(StorageError::Format {
                found: 14,
                newest: 13,
                ..
            })
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("log record 14 is format 14"),
        "{err}"
    );
    assert!(matches!(
        check_store_format(14),
        Err(CatalogError::Storage(StorageError::Format {
            found: 14,
            newest: 13,
            ..
        }))
    ));
    assert!(check_store_format(1).is_ok());
    assert!(check_store_format(2).is_ok());
    assert!(check_store_format(3).is_ok());
    assert!(check_store_format(4).is_ok());
    assert!(check_store_format(5).is_ok());
    assert!(check_store_format(6).is_ok());
    assert!(check_store_format(7).is_ok());
    assert!(check_store_format(8).is_ok());
    assert!(check_store_format(9).is_ok());
    assert!(check_store_format(10).is_ok());
    assert!(check_store_format(11).is_ok());
    assert!(check_store_format(12).is_ok());
    assert!(check_store_format(13).is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP9").is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP8").is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP7").is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP6").is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP5").is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP4").is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP3").is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP2").is_ok());
    assert!(check_checkpoint_magic(b"EDDYCKP1").is_ok());
    assert!(matches!(
        check_checkpoint_magic(b"NOTACKPT"),
        Err(CatalogError::Corrupt(_))
    ));
    assert!(matches!(
        check_record_format(1, 0),
        Err(CatalogError::Corrupt(_))
    ));
}

/// What the next format looks like when it adds a field: its own frozen type, converted
/// from format 1's. A later build reads what this build wrote, with the new field at its
/// default, and its own records with the field; format 1's bytes keep their meaning.
mod a_later_format {
    use serde::{Deserialize, Serialize};

    use super::super::v1;

    /// A format-2 `TopicRecord` with one field more than format 1's.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    pub struct TopicRecord {
        pub name: String,
        pub id: u128,
        pub partitions: u32,
        pub configs: std::collections::BTreeMap<String, String>,
        pub created_ms: i64,
        pub description: Option<String>,
    }

    impl From<v1::TopicRecord> for TopicRecord {
        fn from(v: v1::TopicRecord) -> Self {
            let v1::TopicRecord {
                name,
                id,
                partitions,
                configs,
                created_ms,
            } = v;
            Self {
                name,
                id,
                partitions,
                configs,
                created_ms,
                description: None,
            }
        }
    }

    /// The later build's reader: by the format the store or log names.
    pub fn decode(format: u64, bytes: &[u8]) -> postcard::Result<TopicRecord> {
        match format {
            1 => postcard::from_bytes::<v1::TopicRecord>(bytes).map(Into::into),
            _ => postcard::from_bytes(bytes),
        }
    }
}

#[test]
fn a_field_added_in_a_later_format_leaves_format_1_data_readable() {
    let written_now = sample_topic().encode().unwrap();
    let read_later = a_later_format::decode(1, &written_now).unwrap();
    assert_eq!(read_later.name, "orders");
    assert_eq!(read_later.configs, sample_topic().configs);
    assert_eq!(read_later.description, None);
    let mut later = read_later;
    later.description = Some("added in format 2".into());
    let written_later = postcard::to_stdvec(&later).unwrap();
    assert_eq!(a_later_format::decode(2, &written_later).unwrap(), later);
    // The later bytes begin with the earlier ones, and a format-1 reader would take them
    // without complaint (postcard ignores trailing bytes): only the format number that
    // every record and store carries tells them apart.
    assert_eq!(&written_later[..written_now.len()], &written_now[..]);
    assert!(postcard::from_bytes::<super::v1::TopicRecord>(&written_later).is_ok());
}
