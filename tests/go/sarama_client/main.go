// A small CLI over IBM/sarama (v1.61.1, from tests/go/go.mod) that
// tests/e2e/test_go_clients.py drives against eddy. Every result is a JSON line on
// stdout; Sarama's own log goes to stderr with -verbose.
//
//	sarama_client produce        -brokers B -topic T -count N [-prefix v]
//	sarama_client consume-group  -brokers B -topic T -group G [-max N] [-idle D]
//	sarama_client admin OP       -brokers B [-topic T] [-group G] [-partitions P] [-config k=v,...]
//
// with OP one of create, list, describe, config, groups, describe-groups, offsets,
// delete. Every subcommand takes -version (a Kafka version Sarama knows, or "newest":
// sarama.MaxVersion, the default) and -offsets-retention (Consumer.Offsets.Retention:
// the retention time of OffsetCommit v2-v4, which Sarama sends at versions 0.9 to 2.0;
// 0 sends Kafka's default, -1; later versions carry no retention time).
//
// Sarama picks each request's version from -version and clamps it to what the broker
// advertises in ApiVersions.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
)

var out = json.NewEncoder(os.Stdout)
var outMu sync.Mutex

func emit(v map[string]interface{}) {
	outMu.Lock()
	defer outMu.Unlock()
	if err := out.Encode(v); err != nil {
		log.Fatalf("stdout: %v", err)
	}
}

func fail(what string, err error) {
	emit(map[string]interface{}{"event": "error", "op": what, "error": err.Error()})
	os.Exit(1)
}

type common struct {
	brokers   string
	version   string
	retention time.Duration
	verbose   bool
	clientID  string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.brokers, "brokers", "127.0.0.1:9092", "bootstrap brokers, comma-separated")
	fs.StringVar(&c.version, "version", "newest", "Kafka version Sarama speaks (newest: sarama.MaxVersion)")
	fs.DurationVar(&c.retention, "offsets-retention", 0, "Consumer.Offsets.Retention (OffsetCommit v2-v4 only; 0: Kafka's default)")
	fs.BoolVar(&c.verbose, "verbose", false, "Sarama's log on stderr")
	fs.StringVar(&c.clientID, "client-id", "eddy-e2e-sarama", "client id")
}

func (c *common) config() *sarama.Config {
	if c.verbose {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	}
	v := sarama.MaxVersion
	if c.version != "newest" {
		var err error
		if v, err = sarama.ParseKafkaVersion(c.version); err != nil {
			fail("config", err)
		}
	}
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = c.clientID
	cfg.Consumer.Offsets.Retention = c.retention
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 500 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		fail("config", err)
	}
	return cfg
}

func (c *common) brokerList() []string { return strings.Split(c.brokers, ",") }

// produce: a SyncProducer (acks=all) sends keyed messages k0..kN-1 with values
// PREFIX0..PREFIXN-1, partitioned by Sarama's default hash of the key, and prints one
// line per acknowledged message.
func produce(args []string) {
	var c common
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	c.register(fs)
	topic := fs.String("topic", "", "topic")
	count := fs.Int("count", 10, "messages")
	prefix := fs.String("prefix", "v", "value prefix")
	start := fs.Int("start", 0, "first message number")
	fs.Parse(args)

	cfg := c.config()
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 5
	p, err := sarama.NewSyncProducer(c.brokerList(), cfg)
	if err != nil {
		fail("new-producer", err)
	}
	for i := *start; i < *start+*count; i++ {
		key, value := fmt.Sprintf("k%d", i), fmt.Sprintf("%s%d", *prefix, i)
		part, off, err := p.SendMessage(&sarama.ProducerMessage{
			Topic: *topic, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(value),
		})
		if err != nil {
			fail("send", err)
		}
		emit(map[string]interface{}{"event": "acked", "topic": *topic, "partition": part,
			"offset": off, "key": key, "value": value})
	}
	if err := p.Close(); err != nil {
		fail("close", err)
	}
}

// handler prints assignments and messages and marks each message consumed, so Sarama's
// offset manager commits it (every CommitInterval, and when the session ends).
type handler struct {
	mu       sync.Mutex
	consumed int
	max      int
	last     time.Time
	assigned bool
	done     context.CancelFunc
}

func (h *handler) Setup(s sarama.ConsumerGroupSession) error {
	claims := map[string][]int32{}
	for t, ps := range s.Claims() {
		sorted := append([]int32(nil), ps...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		claims[t] = sorted
	}
	h.mu.Lock()
	h.assigned = true
	h.last = time.Now()
	h.mu.Unlock()
	emit(map[string]interface{}{"event": "assign", "member": s.MemberID(),
		"generation": s.GenerationID(), "claims": claims})
	return nil
}

func (h *handler) Cleanup(s sarama.ConsumerGroupSession) error {
	emit(map[string]interface{}{"event": "revoke", "member": s.MemberID(),
		"generation": s.GenerationID()})
	return nil
}

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		emit(map[string]interface{}{"event": "message", "topic": msg.Topic,
			"partition": msg.Partition, "offset": msg.Offset, "key": string(msg.Key),
			"value": string(msg.Value), "generation": s.GenerationID()})
		s.MarkMessage(msg, "")
		h.mu.Lock()
		h.consumed++
		h.last = time.Now()
		reached := h.max > 0 && h.consumed >= h.max
		h.mu.Unlock()
		if reached {
			h.done()
		}
	}
	return nil
}

// consume-group: one member of a consumer group, printing `assign`, `message` and
// `revoke` lines; it leaves the group (committing what it marked) after -max messages,
// after -idle without a message once it had an assignment, or on SIGTERM/SIGINT, and
// prints `exit` with its count last.
func consumeGroup(args []string) {
	var c common
	fs := flag.NewFlagSet("consume-group", flag.ExitOnError)
	c.register(fs)
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "group id")
	max := fs.Int("max", 0, "exit after this many messages (0: no limit)")
	idle := fs.Duration("idle", 0, "exit after this long without a message once assigned (0: never)")
	deadline := fs.Duration("deadline", 5*time.Minute, "exit after this long whatever happens")
	newest := fs.Bool("newest", false, "start a partition without a committed offset at its end")
	fs.Parse(args)

	cfg := c.config()
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if *newest {
		cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	cfg.Consumer.Offsets.CommitInterval = 200 * time.Millisecond
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.MaxWaitTime = 250 * time.Millisecond

	g, err := sarama.NewConsumerGroup(c.brokerList(), *group, cfg)
	if err != nil {
		fail("new-consumer-group", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()
	h := &handler{max: *max, done: cancel}

	go func() {
		for err := range g.Errors() {
			emit(map[string]interface{}{"event": "error", "op": "group", "error": err.Error()})
		}
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	if *idle > 0 {
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					h.mu.Lock()
					quiet := h.assigned && time.Since(h.last) > *idle
					h.mu.Unlock()
					if quiet {
						cancel()
						return
					}
				}
			}
		}()
	}
	emit(map[string]interface{}{"event": "ready"})
	var consumeErr error
	for ctx.Err() == nil {
		// Consume returns at every rebalance; the loop joins again.
		if err := g.Consume(ctx, []string{*topic}, h); err != nil && ctx.Err() == nil {
			consumeErr = err
			break
		}
	}
	closeErr := g.Close()
	h.mu.Lock()
	n := h.consumed
	h.mu.Unlock()
	ev := map[string]interface{}{"event": "exit", "consumed": n}
	if consumeErr != nil {
		ev["error"] = consumeErr.Error()
	}
	if closeErr != nil {
		ev["close_error"] = closeErr.Error()
	}
	emit(ev)
	if consumeErr != nil || closeErr != nil {
		os.Exit(1)
	}
}

func kerr(e sarama.KError) interface{} {
	if e == sarama.ErrNoError {
		return nil
	}
	return e.Error()
}

// admin OP: one ClusterAdmin call, its result as one JSON line.
func admin(args []string) {
	if len(args) == 0 {
		log.Fatal("admin needs an operation")
	}
	op := args[0]
	var c common
	fs := flag.NewFlagSet("admin", flag.ExitOnError)
	c.register(fs)
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "group id")
	partitions := fs.Int("partitions", 1, "partitions of a created topic")
	configs := fs.String("config", "", "topic configs of a created topic: k=v,k=v")
	fs.Parse(args[1:])

	a, err := sarama.NewClusterAdmin(c.brokerList(), c.config())
	if err != nil {
		fail("new-admin", err)
	}
	defer a.Close()
	res := map[string]interface{}{"event": op}
	switch op {
	case "create":
		entries := map[string]*string{}
		if *configs != "" {
			for _, kv := range strings.Split(*configs, ",") {
				parts := strings.SplitN(kv, "=", 2)
				v := parts[1]
				entries[parts[0]] = &v
			}
		}
		err = a.CreateTopic(*topic, &sarama.TopicDetail{NumPartitions: int32(*partitions),
			ReplicationFactor: 1, ConfigEntries: entries}, false)
		if err != nil {
			fail(op, err)
		}
	case "list":
		topics, err := a.ListTopics()
		if err != nil {
			fail(op, err)
		}
		t := map[string]interface{}{}
		for name, d := range topics {
			cfg := map[string]string{}
			for k, v := range d.ConfigEntries {
				if v != nil {
					cfg[k] = *v
				}
			}
			t[name] = map[string]interface{}{"partitions": d.NumPartitions,
				"replication_factor": d.ReplicationFactor, "configs": cfg}
		}
		res["topics"] = t
	case "describe":
		md, err := a.DescribeTopics([]string{*topic})
		if err != nil {
			fail(op, err)
		}
		var topics []interface{}
		for _, tm := range md {
			var parts []interface{}
			for _, p := range tm.Partitions {
				parts = append(parts, map[string]interface{}{"id": p.ID, "leader": p.Leader,
					"replicas": p.Replicas, "isr": p.Isr, "error": kerr(p.Err)})
			}
			sort.Slice(parts, func(i, j int) bool {
				return parts[i].(map[string]interface{})["id"].(int32) < parts[j].(map[string]interface{})["id"].(int32)
			})
			topics = append(topics, map[string]interface{}{"name": tm.Name, "internal": tm.IsInternal,
				"error": kerr(tm.Err), "partitions": parts})
		}
		res["topics"] = topics
	case "config":
		entries, err := a.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: *topic})
		if err != nil {
			fail(op, err)
		}
		cfg := map[string]interface{}{}
		for _, e := range entries {
			cfg[e.Name] = map[string]interface{}{"value": e.Value, "default": e.Default,
				"read_only": e.ReadOnly, "sensitive": e.Sensitive}
		}
		res["configs"] = cfg
	case "groups":
		groups, err := a.ListConsumerGroups()
		if err != nil {
			fail(op, err)
		}
		res["groups"] = groups
	case "describe-groups":
		gs, err := a.DescribeConsumerGroups([]string{*group})
		if err != nil {
			fail(op, err)
		}
		var groups []interface{}
		for _, g := range gs {
			members := map[string]interface{}{}
			for id, m := range g.Members {
				mem := map[string]interface{}{"client_id": m.ClientId, "client_host": m.ClientHost}
				if asg, err := m.GetMemberAssignment(); err == nil && asg != nil {
					mem["assignment"] = asg.Topics
				} else if err != nil {
					mem["assignment_error"] = err.Error()
				}
				if md, err := m.GetMemberMetadata(); err == nil && md != nil {
					mem["topics"] = md.Topics
				}
				members[id] = mem
			}
			groups = append(groups, map[string]interface{}{"group": g.GroupId, "state": g.State,
				"protocol_type": g.ProtocolType, "protocol": g.Protocol, "error": kerr(g.Err),
				"members": members})
		}
		res["groups"] = groups
	case "offsets":
		var tps map[string][]int32
		if *topic != "" {
			md, err := a.DescribeTopics([]string{*topic})
			if err != nil {
				fail(op, err)
			}
			tps = map[string][]int32{}
			for _, tm := range md {
				for _, p := range tm.Partitions {
					tps[tm.Name] = append(tps[tm.Name], p.ID)
				}
			}
		}
		resp, err := a.ListConsumerGroupOffsets(*group, tps)
		if err != nil {
			fail(op, err)
		}
		offsets := map[string]map[string]interface{}{}
		for t, parts := range resp.Blocks {
			offsets[t] = map[string]interface{}{}
			for p, b := range parts {
				offsets[t][fmt.Sprint(p)] = map[string]interface{}{"offset": b.Offset,
					"metadata": b.Metadata, "error": kerr(b.Err)}
			}
		}
		res["offsets"] = offsets
		res["error"] = kerr(resp.Err)
	case "delete":
		if err := a.DeleteTopic(*topic); err != nil {
			fail(op, err)
		}
	default:
		log.Fatalf("unknown admin operation %q", op)
	}
	emit(res)
}

func main() {
	log.SetOutput(os.Stderr)
	if len(os.Args) < 2 {
		log.Fatal("usage: sarama_client produce|consume-group|admin ...")
	}
	switch os.Args[1] {
	case "produce":
		produce(os.Args[2:])
	case "consume-group":
		consumeGroup(os.Args[2:])
	case "admin":
		admin(os.Args[2:])
	default:
		log.Fatalf("unknown subcommand %q", os.Args[1])
	}
}
