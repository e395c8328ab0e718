// A Go producer and consumer of Avro records through a Confluent-compatible schema
// registry, with franz-go's kgo and sr packages and hamba/avro: the way Go services
// use one.
//
//	sr_client produce BOOTSTRAP REGISTRY_URL USER PASS TOPIC N
//	  registers the Order schema under TOPIC-value, produces N orders framed with the
//	  schema id (sr.Serde), prints {"id": .., "version": ..}
//	sr_client consume BOOTSTRAP REGISTRY_URL USER PASS TOPIC N
//	  reads N records from the start, looks each one's schema up by the id in its
//	  frame, decodes it, and prints one JSON object per record
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

const orderSchema = `{"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"id","type":"long"},{"name":"item","type":"string"},
  {"name":"tags","type":{"type":"array","items":"string"}},
  {"name":"note","type":["null","string"],"default":null}]}`

type Order struct {
	ID   int64    `avro:"id"`
	Item string   `avro:"item"`
	Tags []string `avro:"tags"`
	Note *string  `avro:"note"`
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 8 {
		fail(fmt.Errorf("usage: sr_client produce|consume BOOTSTRAP REGISTRY_URL USER PASS TOPIC N"))
	}
	mode, bootstrap, url, user, pass, topic := os.Args[1], os.Args[2], os.Args[3], os.Args[4], os.Args[5], os.Args[6]
	n, err := strconv.Atoi(os.Args[7])
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	registry, err := sr.NewClient(sr.URLs(url), sr.BasicAuth(user, pass))
	if err != nil {
		fail(err)
	}
	switch mode {
	case "produce":
		produce(ctx, registry, bootstrap, topic, n)
	case "consume":
		consume(ctx, registry, bootstrap, topic, n)
	default:
		fail(fmt.Errorf("unknown mode %q", mode))
	}
}

func produce(ctx context.Context, registry *sr.Client, bootstrap, topic string, n int) {
	schema := avro.MustParse(orderSchema)
	got, err := registry.CreateSchema(ctx, topic+"-value", sr.Schema{Schema: orderSchema, Type: sr.TypeAvro})
	if err != nil {
		fail(err)
	}
	var serde sr.Serde
	serde.Register(got.ID, Order{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		var note *string
		if i%2 == 1 {
			s := fmt.Sprintf("note %d", i)
			note = &s
		}
		value, err := serde.Encode(Order{ID: int64(i), Item: fmt.Sprintf("item-%d", i), Tags: []string{"go"}, Note: note})
		if err != nil {
			fail(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			fail(err)
		}
	}
	out, _ := json.Marshal(map[string]int{"id": got.ID, "version": got.Version})
	fmt.Println(string(out))
}

func consume(ctx context.Context, registry *sr.Client, bootstrap, topic string, n int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	schemas := map[int]avro.Schema{}
	var header sr.ConfluentHeader
	for seen := 0; seen < n; {
		fetches := cl.PollFetches(ctx)
		if errs := fetches.Errors(); len(errs) > 0 {
			fail(errs[0].Err)
		}
		for _, r := range fetches.Records() {
			id, body, err := header.DecodeID(r.Value)
			if err != nil {
				fail(err)
			}
			schema, ok := schemas[id]
			if !ok {
				s, err := registry.SchemaByID(ctx, id)
				if err != nil {
					fail(err)
				}
				if schema, err = avro.Parse(s.Schema); err != nil {
					fail(err)
				}
				schemas[id] = schema
			}
			var v map[string]any
			if err := avro.Unmarshal(schema, body, &v); err != nil {
				fail(err)
			}
			out, _ := json.Marshal(map[string]any{"offset": r.Offset, "schema_id": id, "value": v})
			fmt.Println(string(out))
			seen++
		}
	}
}
