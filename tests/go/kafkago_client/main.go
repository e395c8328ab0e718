// A small CLI over segmentio/kafka-go (v0.4.51, from tests/go/go.mod) that
// tests/e2e/test_go_clients.py drives against eddy. Every result is a JSON line on
// stdout; kafka-go's own log goes to stderr with -verbose.
//
//	kafkago_client create-topic  -brokers B -topic T -partitions P   (Conn.CreateTopics)
//	kafkago_client partitions    -brokers B -topic T                 (Conn.ReadPartitions)
//	kafkago_client delete-topic  -brokers B -topic T                 (Conn.DeleteTopics)
//	kafkago_client produce       -brokers B -topic T -count N [-prefix v]   (Writer)
//	kafkago_client consume-group -brokers B -topic T -group G [-max N] [-idle D] (Reader)
//
// kafka-go 0.4 picks some versions from the broker's ApiVersions (a Conn's Metadata,
// Fetch, JoinGroup, CreateTopics and DeleteTopics, and the Writer's requests, which go
// through its Transport) and sends others at fixed versions (ListOffsets and its
// consumer group's FindCoordinator, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and
// OffsetFetch); test_go_clients.py's docstring lists what it sends to eddy.
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

	kafka "github.com/segmentio/kafka-go"
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
	brokers string
	topic   string
	verbose bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.brokers, "brokers", "127.0.0.1:9092", "bootstrap brokers, comma-separated")
	fs.StringVar(&c.topic, "topic", "", "topic")
	fs.BoolVar(&c.verbose, "verbose", false, "kafka-go's log on stderr")
}

func (c *common) brokerList() []string { return strings.Split(c.brokers, ",") }

// logger is kafka-go's log on stderr with -verbose, else nil (an untyped nil: kafka-go
// calls any non-nil Logger).
func (c *common) logger(prefix string) kafka.Logger {
	if !c.verbose {
		return nil
	}
	return log.New(os.Stderr, prefix, log.LstdFlags|log.Lmicroseconds)
}

func (c *common) dial() *kafka.Conn {
	conn, err := kafka.DialContext(context.Background(), "tcp", c.brokerList()[0])
	if err != nil {
		fail("dial", err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	return conn
}

func createTopic(args []string) {
	var c common
	fs := flag.NewFlagSet("create-topic", flag.ExitOnError)
	c.register(fs)
	partitions := fs.Int("partitions", 1, "partitions")
	fs.Parse(args)
	conn := c.dial()
	defer conn.Close()
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: c.topic, NumPartitions: *partitions,
		ReplicationFactor: 1}); err != nil {
		fail("create-topic", err)
	}
	emit(map[string]interface{}{"event": "created", "topic": c.topic})
}

func partitions(args []string) {
	var c common
	fs := flag.NewFlagSet("partitions", flag.ExitOnError)
	c.register(fs)
	fs.Parse(args)
	conn := c.dial()
	defer conn.Close()
	ps, err := conn.ReadPartitions(c.topic)
	if err != nil {
		fail("partitions", err)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	var list []interface{}
	for _, p := range ps {
		list = append(list, map[string]interface{}{"topic": p.Topic, "id": p.ID,
			"leader":   fmt.Sprintf("%s:%d", p.Leader.Host, p.Leader.Port),
			"replicas": len(p.Replicas), "isr": len(p.Isr)})
	}
	emit(map[string]interface{}{"event": "partitions", "partitions": list})
}

func deleteTopic(args []string) {
	var c common
	fs := flag.NewFlagSet("delete-topic", flag.ExitOnError)
	c.register(fs)
	fs.Parse(args)
	conn := c.dial()
	defer conn.Close()
	if err := conn.DeleteTopics(c.topic); err != nil {
		fail("delete-topic", err)
	}
	emit(map[string]interface{}{"event": "deleted", "topic": c.topic})
}

// produce: a synchronous Writer with the Hash balancer (the key picks the partition)
// writes k0..kN-1 / PREFIX0..PREFIXN-1 in one WriteMessages call; kafka-go reports no
// offsets, so it prints the count once the write returned.
func produce(args []string) {
	var c common
	fs := flag.NewFlagSet("produce", flag.ExitOnError)
	c.register(fs)
	count := fs.Int("count", 10, "messages")
	prefix := fs.String("prefix", "v", "value prefix")
	fs.Parse(args)
	w := &kafka.Writer{
		Addr: kafka.TCP(c.brokerList()...), Topic: c.topic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, MaxAttempts: 3, BatchTimeout: 50 * time.Millisecond,
		Logger: c.logger("[kafka-go writer] "), ErrorLogger: c.logger("[kafka-go writer error] "),
	}
	msgs := make([]kafka.Message, *count)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s%d", *prefix, i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		fail("write", err)
	}
	if err := w.Close(); err != nil {
		fail("close", err)
	}
	emit(map[string]interface{}{"event": "written", "count": *count})
}

// consume-group: a Reader with a GroupID, reading with FetchMessage and committing each
// message with CommitMessages (synchronous commits), printing one line per message. It
// stops after -max messages, after -idle without one (once it read a first message or
// -idle passed since the start), or on SIGTERM/SIGINT, and prints `exit` last.
func consumeGroup(args []string) {
	var c common
	fs := flag.NewFlagSet("consume-group", flag.ExitOnError)
	c.register(fs)
	group := fs.String("group", "", "group id")
	max := fs.Int("max", 0, "exit after this many messages (0: no limit)")
	idle := fs.Duration("idle", 0, "exit after this long without a message (0: never)")
	deadline := fs.Duration("deadline", 5*time.Minute, "exit after this long whatever happens")
	fs.Parse(args)
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: c.brokerList(), Topic: c.topic, GroupID: *group,
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 250 * time.Millisecond,
		SessionTimeout: 10 * time.Second, HeartbeatInterval: 500 * time.Millisecond,
		RetentionTime: 24 * time.Hour,
		Logger:        c.logger("[kafka-go reader] "), ErrorLogger: c.logger("[kafka-go reader error] "),
	})
	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	emit(map[string]interface{}{"event": "ready"})
	n := 0
	var readErr error
	for ctx.Err() == nil && (*max == 0 || n < *max) {
		rctx, rcancel := ctx, context.CancelFunc(func() {})
		if *idle > 0 {
			rctx, rcancel = context.WithTimeout(ctx, *idle)
		}
		m, err := r.FetchMessage(rctx)
		idled := rctx.Err() != nil && ctx.Err() == nil
		rcancel()
		if idled {
			break
		}
		if err != nil {
			if ctx.Err() == nil {
				readErr = err
			}
			break
		}
		emit(map[string]interface{}{"event": "message", "topic": m.Topic, "partition": m.Partition,
			"offset": m.Offset, "key": string(m.Key), "value": string(m.Value)})
		if err := r.CommitMessages(ctx, m); err != nil {
			readErr = fmt.Errorf("commit: %v", err)
			break
		}
		n++
	}
	closeErr := r.Close()
	ev := map[string]interface{}{"event": "exit", "consumed": n}
	if readErr != nil {
		ev["error"] = readErr.Error()
	}
	if closeErr != nil {
		ev["close_error"] = closeErr.Error()
	}
	emit(ev)
	if readErr != nil {
		os.Exit(1)
	}
}

func main() {
	log.SetOutput(os.Stderr)
	if len(os.Args) < 2 {
		log.Fatal("usage: kafkago_client create-topic|partitions|delete-topic|produce|consume-group ...")
	}
	switch os.Args[1] {
	case "create-topic":
		createTopic(os.Args[2:])
	case "partitions":
		partitions(os.Args[2:])
	case "delete-topic":
		deleteTopic(os.Args[2:])
	case "produce":
		produce(os.Args[2:])
	case "consume-group":
		consumeGroup(os.Args[2:])
	default:
		log.Fatalf("unknown subcommand %q", os.Args[1])
	}
}
