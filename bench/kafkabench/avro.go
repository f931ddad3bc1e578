package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// avroEventSchema is the benchmark's event as an Avro producer would
// define it: uuids and a timestamp as logical types, the context a
// nested record, the tags an array, the payload escaped JSON text.
const avroEventSchema = `{"type":"record","name":"Event","namespace":"bench","fields":[
 {"name":"event_id","type":{"type":"string","logicalType":"uuid"}},
 {"name":"list_id","type":"long"},
 {"name":"subscriber_id","type":{"type":"string","logicalType":"uuid"}},
 {"name":"tally","type":"int"},
 {"name":"event_time","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"payload","type":"string"},
 {"name":"user_agent","type":"string"},
 {"name":"subject","type":"string"},
 {"name":"context","type":{"type":"record","name":"Context","fields":[
   {"name":"country","type":"string"},
   {"name":"city","type":"string"},
   {"name":"device","type":{"type":"record","name":"Device","fields":[{"name":"type","type":"string"},{"name":"os","type":"string"}]}},
   {"name":"campaign","type":["null","long"],"default":null}]}},
 {"name":"tags","type":{"type":"array","items":"string"}}]}`

type avroDevice struct {
	Type string `json:"type" avro:"type"`
	OS   string `json:"os" avro:"os"`
}

type avroContext struct {
	Country  string     `json:"country" avro:"country"`
	City     string     `json:"city" avro:"city"`
	Device   avroDevice `json:"device" avro:"device"`
	Campaign *int64     `json:"campaign" avro:"campaign"`
}

// avroEvent is one benchmark event, read from its JSON line and written
// as Avro.
type avroEvent struct {
	EventID      string      `json:"event_id" avro:"event_id"`
	ListID       int64       `json:"list_id" avro:"list_id"`
	SubscriberID string      `json:"subscriber_id" avro:"subscriber_id"`
	Tally        int32       `json:"tally" avro:"tally"`
	EventTime    time.Time   `json:"event_time" avro:"event_time"`
	Payload      string      `json:"payload" avro:"payload"`
	UserAgent    string      `json:"user_agent" avro:"user_agent"`
	Subject      string      `json:"subject" avro:"subject"`
	Context      avroContext `json:"context" avro:"context"`
	Tags         []string    `json:"tags" avro:"tags"`
}

// registryCmd serves franz-go's in-memory Schema Registry (srfake) until
// ctx is cancelled, its URL written to URLFILE.
func registryCmd(ctx context.Context, args []string) error {
	if len(args) != 1 {
		usage()
	}
	reg := srfake.New()
	defer reg.Close()
	tmp := args[0] + ".tmp"
	if err := os.WriteFile(tmp, []byte(reg.URL()+"\n"), 0o644); err != nil {
		return fmt.Errorf("registry: write URL: %w", err)
	}
	if err := os.Rename(tmp, args[0]); err != nil {
		return fmt.Errorf("registry: publish URL: %w", err)
	}
	<-ctx.Done()
	return nil
}

// avroEncoder registers avroEventSchema under subject and returns what
// turns a JSON line into the Confluent wire format's Avro record, through
// franz-go's Serde.
func avroEncoder(ctx context.Context, url, subject string) (func([]byte) ([]byte, error), error) {
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		return nil, err
	}
	ss, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: avroEventSchema})
	if err != nil {
		return nil, fmt.Errorf("register %s: %w", subject, err)
	}
	sc, err := avro.Parse(avroEventSchema)
	if err != nil {
		return nil, err
	}
	var serde sr.Serde
	serde.Register(ss.ID, avroEvent{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(sc, v) }))
	return func(line []byte) ([]byte, error) {
		var e avroEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, err
		}
		return serde.Encode(e)
	}, nil
}

// avroDecoder is the bare decode loop's step: the schema id of the wire
// header, the schema fetched once per id, the payload decoded by hamba
// into generic values (maps, slices, scalars), as a consumer without a
// generated type does.
func avroDecoder(ctx context.Context, url string) func([]byte) error {
	var (
		mu      sync.Mutex
		cl      *sr.Client
		schemas = map[int]avro.Schema{}
	)
	return func(b []byte) error {
		var h sr.ConfluentHeader
		id, payload, err := h.DecodeID(b)
		if err != nil {
			return err
		}
		mu.Lock()
		sc, ok := schemas[id]
		if !ok {
			if cl == nil {
				if cl, err = sr.NewClient(sr.URLs(url)); err != nil {
					mu.Unlock()
					return err
				}
			}
			s, err := cl.SchemaByID(ctx, id)
			if err == nil {
				sc, err = avro.Parse(s.Schema)
			}
			if err != nil {
				mu.Unlock()
				return fmt.Errorf("schema id %d: %w", id, err)
			}
			schemas[id] = sc
		}
		mu.Unlock()
		var v any
		if err := avro.Unmarshal(sc, payload, &v); err != nil {
			return err
		}
		if _, ok := v.(map[string]any); !ok {
			return errors.New("a record did not decode to a record")
		}
		return nil
	}
}
