//! Kafka transactions in the embedded catalog: the last stable offset, markers, held offsets and aborted ranges.

use catalog::{OpOutcome, TxnOp};

use super::*;

pub(super) fn txn_record(
    producer_id: i64,
    epoch: i16,
    phase: catalog::TxnPhase,
    partitions: &[(&str, u32)],
    groups: &[&str],
) -> catalog::TxnRecord {
    catalog::TxnRecord {
        producer_id,
        epoch,
        timeout_ms: 60_000,
        phase,
        partitions: partitions
            .iter()
            .map(|(t, p)| (t.to_string(), *p))
            .collect(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        started_ms: 1,
        updated_ms: 1,
    }
}

pub(super) fn txn_append(
    id: u128,
    partition: u32,
    txn: &str,
    producer_id: i64,
    epoch: i16,
    seq: i32,
) -> Op {
    let mut op = idempotent(id, partition, 2, producer_id, seq);
    if let Op::Kafka(KafkaOp::Append {
        producer: Some(p),
        transactional_id,
        ..
    }) = &mut op
    {
        p.epoch = epoch;
        *transactional_id = Some(txn.into());
    }
    op
}

pub(super) fn end_txn(
    id: u128,
    partitions: &[u32],
    producer_id: i64,
    epoch: i16,
    commit: bool,
) -> Op {
    Op::Txn(TxnOp::EndTxn {
        id: "tx".into(),
        producer_id,
        epoch,
        commit,
        markers: partitions
            .iter()
            .map(|p| catalog::TxnMarker {
                topic_id: id,
                partition: *p,
                timestamp: 5,
                batch: vec![0u8; 20].into(),
            })
            .collect(),
        record: txn_record(
            producer_id,
            epoch,
            if commit {
                catalog::TxnPhase::CompleteCommit
            } else {
                catalog::TxnPhase::CompleteAbort
            },
            &[],
            &[],
        ),
    })
}

/// Transactions as the catalog keeps them: appends only inside their open transaction,
/// the last stable offset held at an open transaction's first offset, an abort recorded
/// for read_committed readers, held offsets committed with the markers, and all of it
/// durable across a restart and a rebuild from a checkpoint.
#[tokio::test(flavor = "multi_thread")]
async fn transactions_hold_the_stable_offset_and_end_everywhere_at_once() {
    use catalog::TxnPhase::Ongoing;
    let dir = tempfile::tempdir().unwrap();
    let c = open(dir.path());
    commit(&c, vec![topic("t", 7, 2)]).await.unwrap();
    // No transaction: a transactional append is refused.
    assert!(matches!(
        commit(&c, vec![txn_append(7, 0, "tx", 3, 0, 0)]).await,
        Err(CatalogError::InvalidTxnState(_))
    ));
    let open_txn = |groups: &[&str]| {
        Op::Txn(TxnOp::PutTxn {
            id: "tx".into(),
            record: txn_record(3, 0, Ongoing, &[("t", 0), ("t", 1)], groups),
        })
    };
    commit(&c, vec![append(7, 0, 1, 1), open_txn(&["g"])])
        .await
        .unwrap();
    commit(
        &c,
        vec![
            txn_append(7, 0, "tx", 3, 0, 0),
            txn_append(7, 1, "tx", 3, 0, 0),
        ],
    )
    .await
    .unwrap();
    // A later plain record does not move the stable offset past the open transaction.
    commit(&c, vec![append(7, 0, 1, 2)]).await.unwrap();
    let lso = async |c: &EmbeddedCatalog, p: u32| {
        let st = c.kafka().partition(7, p).await.unwrap().unwrap();
        (
            c.txns()
                .txn_partition(7, p)
                .await
                .unwrap()
                .last_stable_offset(st.next_offset),
            st.next_offset,
        )
    };
    // The group's committed offset of the source partition, and whether an open
    // transaction holds one.
    let committed = async |c: &EmbeddedCatalog| {
        let found = c.groups().offset("g", "src", 0).await.unwrap();
        found.map(|o| o.offset)
    };
    let held_open = async |c: &EmbeddedCatalog| {
        let txns = c.txns();
        txns.has_pending_txn_offset("g", "src", 0).await.unwrap()
    };
    assert_eq!(lso(&c, 0).await, (1, 4));
    assert_eq!(lso(&c, 1).await, (0, 2));
    // A wrong epoch, a partition outside the transaction, a group outside it: refused.
    assert!(matches!(
        commit(&c, vec![txn_append(7, 0, "tx", 3, 1, 0)]).await,
        Err(CatalogError::InvalidTxnState(_))
    ));
    commit(&c, vec![topic("u", 8, 1)]).await.unwrap();
    assert!(matches!(
        commit(&c, vec![txn_append(8, 0, "tx", 3, 0, 0)]).await,
        Err(CatalogError::InvalidTxnState(_))
    ));
    let held = |group: &str, offset: i64| {
        Op::Txn(TxnOp::TxnOffsetCommit {
            id: "tx".into(),
            producer_id: 3,
            epoch: 0,
            group: group.into(),
            topic: "src".into(),
            partition: 0,
            offset: OffsetRecord {
                offset,
                leader_epoch: -1,
                metadata: None,
                commit_ms: 4,
            },
        })
    };
    assert!(matches!(
        commit(&c, vec![held("other", 1)]).await,
        Err(CatalogError::InvalidTxnState(_))
    ));
    commit(&c, vec![held("g", 42)]).await.unwrap();
    assert!(held_open(&c).await);
    assert_eq!(committed(&c).await, None);

    // Commit: both markers, the offset, the state, at once; the stable offset reaches
    // the end and nothing is recorded as aborted.
    let out = commit(&c, vec![end_txn(7, &[0, 1], 3, 0, true)])
        .await
        .unwrap();
    assert_eq!(out.ops, vec![OpOutcome::Done]);
    assert_eq!(lso(&c, 0).await, (5, 5));
    assert_eq!(lso(&c, 1).await, (3, 3));
    assert!(c.txns().aborted_txns(7, 0, 0, 5).await.unwrap().is_empty());
    assert_eq!(committed(&c).await, Some(42));
    assert!(!held_open(&c).await);
    assert_eq!(
        c.txns().txn("tx").await.unwrap().unwrap().phase,
        catalog::TxnPhase::CompleteCommit
    );
    // Ending it again is refused: it is no longer open.
    assert!(matches!(
        commit(&c, vec![end_txn(7, &[0], 3, 0, true)]).await,
        Err(CatalogError::InvalidTxnState(_))
    ));

    // A second transaction aborted by a fencing epoch: its range is recorded, its held
    // offset dropped, and the zombie's epoch is fenced in the partition.
    commit(&c, vec![open_txn(&["g"])]).await.unwrap();
    commit(&c, vec![txn_append(7, 0, "tx", 3, 0, 2), held("g", 99)])
        .await
        .unwrap();
    assert_eq!(lso(&c, 0).await, (5, 7));
    commit(&c, vec![end_txn(7, &[0, 1], 3, 1, false)])
        .await
        .unwrap();
    assert_eq!(lso(&c, 0).await, (8, 8));
    let aborted = c.txns().aborted_txns(7, 0, 0, 8).await.unwrap();
    assert_eq!(
        aborted,
        vec![catalog::AbortedTxn {
            producer_id: 3,
            first_offset: 5,
            last_offset: 7
        }]
    );
    // A fetch of a range before the transaction, or after its marker, is not told.
    assert!(c.txns().aborted_txns(7, 0, 0, 5).await.unwrap().is_empty());
    assert!(c.txns().aborted_txns(7, 0, 8, 9).await.unwrap().is_empty());
    assert_eq!(committed(&c).await, Some(42));
    assert_eq!(
        c.kafka()
            .producer_state(3, 7, 0)
            .await
            .unwrap()
            .unwrap()
            .epoch,
        1
    );
    // Partition 1 saw no data in it: a marker, nothing recorded.
    assert!(c.txns().aborted_txns(7, 1, 0, 10).await.unwrap().is_empty());

    // Durable: after a restart, and rebuilt from a checkpoint with the store lost.
    c.checkpoint().unwrap();
    c.shutdown();
    drop(c);
    std::fs::remove_dir_all(dir.path().join("drive-0")).unwrap();
    let c = open(dir.path());
    assert_eq!(lso(&c, 0).await, (8, 8));
    assert_eq!(c.txns().aborted_txns(7, 0, 0, 8).await.unwrap(), aborted);
    assert_eq!(
        c.txns().txn("tx").await.unwrap().unwrap().phase,
        catalog::TxnPhase::CompleteAbort
    );
    assert_eq!(c.txns().all().await.unwrap().len(), 1);

    // Retention past the marker forgets the abort.
    commit(
        &c,
        vec![Op::Kafka(KafkaOp::TruncateBefore {
            topic_id: 7,
            partition: 0,
            offset: 8,
        })],
    )
    .await
    .unwrap();
    assert!(c.txns().aborted_txns(7, 0, 0, 8).await.unwrap().is_empty());
}
