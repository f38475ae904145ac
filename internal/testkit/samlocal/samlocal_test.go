package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
)

// Produce through the relay into the in-repo broker, then read every
// partition back with the SDK: the messages, their order and their headers
// are what the manifest says.
func TestProduceThroughRelay(t *testing.T) {
	b, err := iggytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, err := StartRelay("127.0.0.1:0", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	var manifest bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := Spec{Addr: r.Addr().String(), User: "iggy", Password: "iggy", Stream: "sample", Topic: "events", Partitions: 3, Messages: 7, Wave: 1}
	for wave := 1; wave <= 2; wave++ {
		spec.Wave = wave
		n, err := Produce(ctx, spec, &manifest)
		if err != nil || n != 21 {
			t.Fatalf("wave %d: Produce = %d, %v", wave, n, err)
		}
	}
	spec.Partitions = 4
	if _, err := Produce(ctx, spec, &manifest); err == nil || !strings.Contains(err.Error(), "has 3 partitions, not 4") {
		t.Fatalf("Produce into a topic with other partitions: %v", err)
	}

	want := map[int][]Sent{}
	sc := bufio.NewScanner(&manifest)
	for sc.Scan() {
		var s Sent
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		want[s.Partition] = append(want[s.Partition], s)
	}

	c, err := client.NewIggyClient(client.WithTcp(tcp.WithServerAddress(b.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.LoginUser("iggy", "iggy"); err != nil {
		t.Fatal(err)
	}
	sid, _ := iggcon.NewIdentifier("sample")
	tid, _ := iggcon.NewIdentifier("events")
	consumer := iggcon.DefaultConsumer()
	for p := 0; p < 3; p++ {
		pid := uint32(p)
		pm, err := c.PollMessages(sid, tid, consumer, iggcon.OffsetPollingStrategy(0), 100, false, &pid)
		if err != nil {
			t.Fatal(err)
		}
		if len(pm.Messages) != len(want[p]) || len(want[p]) != 14 {
			t.Fatalf("partition %d holds %d messages, manifest %d", p, len(pm.Messages), len(want[p]))
		}
		for i, m := range pm.Messages {
			w := want[p][i]
			if string(m.Payload) != w.Payload || m.Header.Offset != uint64(i) {
				t.Fatalf("partition %d offset %d: %s, manifest %s", p, m.Header.Offset, m.Payload, w.Payload)
			}
			hs, err := iggcon.DeserializeHeaders(m.UserHeaders)
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != len(w.Headers) {
				t.Fatalf("partition %d offset %d: %d headers, manifest %d", p, i, len(hs), len(w.Headers))
			}
			for j, h := range hs {
				if string(h.Key.Value) != w.Headers[j].Key {
					t.Fatalf("header %d key %q, manifest %q", j, h.Key.Value, w.Headers[j].Key)
				}
				if w.Headers[j].Kind == "raw" && base64.StdEncoding.EncodeToString(h.Value.Value) != w.Headers[j].Value {
					t.Fatalf("raw header %x, manifest %v", h.Value.Value, w.Headers[j].Value)
				}
			}
		}
	}
}
