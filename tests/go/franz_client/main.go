// A small CLI over twmb/franz-go (kgo v1.22.3 and kadm v1.20.0, from tests/go/go.mod)
// that tests/e2e/test_franz_go.py drives against eddy. Every result is a JSON line on
// stdout.
//
//	franz_client txn   -brokers B -topic T -txid ID -n N
//	franz_client ctp   -brokers B -in T -out T -group G -txid ID -n N
//	franz_client share -brokers B -topic T -group G -n N [-reject SUFFIX]
//	franz_client admin OP -brokers B [-topic T] [-partitions P] [-group G] [-txid ID]
//
// txn writes N transactions of 3 records each, aborting every third, and reports the
// producer id and epoch after each end (kgo speaks KIP-890's transaction version 2 when
// the broker offers it: the epoch moves on at every end). ctp copies N records from one
// topic to another in a GroupTransactSession (consume, produce and commit the group's
// offsets in one transaction). share consumes N records in a share group (KIP-932),
// accepting each, or rejecting those whose value ends in SUFFIX, and reports each
// record with its delivery count. admin OP is create (a topic), end-offsets,
// share-earliest (the group's share.auto.offset.reset, through IncrementalAlterConfigs
// on a GROUP resource), describe-share, share-offsets or describe-txn.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	out   = json.NewEncoder(os.Stdout)
	outMu sync.Mutex
)

func emit(v map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	if err := out.Encode(v); err != nil {
		log.Fatalf("stdout: %v", err)
	}
}

func fail(what string, err error) {
	emit(map[string]any{"event": "error", "op": what, "error": err.Error()})
	os.Exit(1)
}

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: franz_client txn|ctp|share|admin ...")
	}
	cmd, args := os.Args[1], os.Args[2:]
	op := ""
	if cmd == "admin" && len(args) > 0 {
		op, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "bootstrap brokers")
	topic := fs.String("topic", "", "topic")
	in := fs.String("in", "", "input topic (ctp)")
	outTopic := fs.String("out", "", "output topic (ctp)")
	group := fs.String("group", "", "group")
	txid := fs.String("txid", "", "transactional id")
	n := fs.Int("n", 10, "transactions, records")
	partitions := fs.Int("partitions", 1, "partitions (admin create)")
	reject := fs.String("reject", "", "reject records whose value ends in this (share)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after")
	_ = fs.Parse(args)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	seeds := kgo.SeedBrokers(strings.Split(*brokers, ",")...)
	switch cmd {
	case "txn":
		txn(ctx, seeds, *topic, *txid, *n)
	case "ctp":
		ctp(ctx, seeds, *in, *outTopic, *group, *txid, *n)
	case "share":
		share(ctx, seeds, *topic, *group, *n, *reject)
	case "admin":
		admin(ctx, seeds, op, *topic, *partitions, *group, *txid)
	default:
		log.Fatalf("unknown command %q", cmd)
	}
}

func txn(ctx context.Context, seeds kgo.Opt, topic, txid string, n int) {
	cl, err := kgo.NewClient(seeds, kgo.TransactionalID(txid), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		fail("client", err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		if err := cl.BeginTransaction(); err != nil {
			fail("begin", err)
		}
		for j := 0; j < 3; j++ {
			v := fmt.Sprintf("t%d-r%d", i, j)
			r := &kgo.Record{Value: []byte(v), Partition: int32(j % 2)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				fail("produce", err)
			}
		}
		commit := i%3 != 1
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			fail("end", err)
		}
		id, epoch, err := cl.ProducerID(ctx)
		if err != nil {
			fail("producer id", err)
		}
		emit(map[string]any{"event": "ended", "n": i, "commit": commit, "producer_id": id, "epoch": epoch})
	}
}

func ctp(ctx context.Context, seeds kgo.Opt, in, outTopic, group, txid string, n int) {
	s, err := kgo.NewGroupTransactSession(seeds, kgo.TransactionalID(txid), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic(outTopic))
	if err != nil {
		fail("session", err)
	}
	defer s.Close()
	copied := 0
	for copied < n {
		fetches := s.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			fail("poll", err)
		}
		fetches.EachError(func(t string, p int32, err error) { fail(fmt.Sprintf("fetch %s/%d", t, p), err) })
		if fetches.NumRecords() == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			fail("begin", err)
		}
		var rs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			rs = append(rs, &kgo.Record{Key: r.Key, Value: append([]byte("copy-"), r.Value...)})
		})
		if err := s.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			fail("produce", err)
		}
		committed, err := s.End(ctx, kgo.TryCommit)
		if err != nil {
			fail("end", err)
		}
		if committed {
			copied += len(rs)
		}
		emit(map[string]any{"event": "round", "records": len(rs), "committed": committed})
	}
	emit(map[string]any{"event": "done", "copied": copied})
}

func share(ctx context.Context, seeds kgo.Opt, topic, group string, n int, reject string) {
	cl, err := kgo.NewClient(seeds, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	if err != nil {
		fail("client", err)
	}
	seen := 0
	for seen < n {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			fail("poll", err)
		}
		fetches.EachError(func(t string, p int32, err error) { fail(fmt.Sprintf("fetch %s/%d", t, p), err) })
		fetches.EachRecord(func(r *kgo.Record) {
			seen++
			status := kgo.AckAccept
			if reject != "" && strings.HasSuffix(string(r.Value), reject) {
				status = kgo.AckReject
			}
			r.Ack(status)
			emit(map[string]any{"event": "record", "value": string(r.Value), "partition": r.Partition,
				"offset": r.Offset, "delivery": r.DeliveryCount(), "rejected": status == kgo.AckReject})
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		fail("flush acks", err)
	}
	cl.Close()
	emit(map[string]any{"event": "done", "records": seen})
}

func admin(ctx context.Context, seeds kgo.Opt, op, topic string, partitions int, group, txid string) {
	cl, err := kgo.NewClient(seeds)
	if err != nil {
		fail("client", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	switch op {
	case "create":
		r, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			fail("create", err)
		}
		emit(map[string]any{"event": "created", "topic": r.Topic, "partitions": partitions})
	case "end-offsets":
		offs, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			fail("end offsets", err)
		}
		byPartition := map[string]int64{}
		offs.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				fail("end offsets", o.Err)
			}
			byPartition[fmt.Sprint(o.Partition)] = o.Offset
		})
		emit(map[string]any{"event": "end-offsets", "offsets": byPartition})
	case "share-earliest":
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
		res.ResourceName = group
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name = "share.auto.offset.reset"
		v := "earliest"
		c.Value = &v
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			fail("alter group config", err)
		}
		for _, r := range resp.Resources {
			if r.ErrorCode != 0 {
				fail("alter group config", fmt.Errorf("error code %d: %v", r.ErrorCode, r.ErrorMessage))
			}
		}
		emit(map[string]any{"event": "configured", "group": group})
	case "describe-share":
		d, err := adm.DescribeShareGroups(ctx, group)
		if err != nil {
			fail("describe share", err)
		}
		g := d[group]
		if g.Err != nil {
			fail("describe share", g.Err)
		}
		emit(map[string]any{"event": "share-group", "state": g.GroupState, "members": len(g.Members)})
	case "share-offsets":
		d, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			fail("share offsets", err)
		}
		starts := map[string]int64{}
		for _, g := range d {
			if g.Err != nil {
				fail("share offsets", g.Err)
			}
			for t, ps := range g.Offsets {
				for p, o := range ps {
					if o.Err != nil {
						fail("share offsets", o.Err)
					}
					starts[fmt.Sprintf("%s/%d", t, p)] = o.StartOffset
				}
			}
		}
		emit(map[string]any{"event": "share-offsets", "start": starts})
	case "describe-txn":
		d, err := adm.DescribeTransactions(ctx, txid)
		if err != nil {
			fail("describe txn", err)
		}
		t := d[txid]
		if t.Err != nil {
			fail("describe txn", t.Err)
		}
		emit(map[string]any{"event": "txn", "state": t.State, "producer_id": t.ProducerID, "epoch": t.ProducerEpoch})
	default:
		log.Fatalf("unknown admin op %q", op)
	}
}
