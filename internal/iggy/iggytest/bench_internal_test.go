package iggytest

import (
	"bytes"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

// BenchmarkPollHandler measures the broker's side of a 1000 × 1 KiB poll alone
// (decode, copy into the reply buffer), without sockets or the SDK.
func BenchmarkPollHandler(b *testing.B) {
	br := newBroker(defaultConfig())
	if _, err := br.CreateStream("s"); err != nil {
		b.Fatal(err)
	}
	if _, err := br.CreateTopic("s", "t", 1); err != nil {
		b.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 1024)
	for range 1000 {
		if _, err := br.Append("s", "t", 0, payload, nil); err != nil {
			b.Fatal(err)
		}
	}
	// Single consumer 1, stream "s", topic "t", partition 0, Offset(0), count 1000.
	req := encodeFrame(CodePollMessages, goldenPayload(b, "01 01040100 0000 020173 020174 01 00000000 01 0000000000000000 e8030000 00"))
	c := &conn{b: br, sess: &session{id: 1, authed: true}}
	r := bytes.NewReader(nil)
	b.SetBytes(1000 * 1024)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(req)
		reply, _, err := c.handle(r)
		if err != nil || len(reply) != 8+16+1000*(64+1024) {
			b.Fatalf("reply of %d bytes, %v", len(reply), err)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkVSRPollHandler measures the broker's side of a 1000 × 1 KiB poll on 0.9
// (decode, render batch records with checksums), without sockets.
func BenchmarkVSRPollHandler(b *testing.B) {
	br := newBroker(defaultConfig())
	if _, err := br.CreateStream("s"); err != nil {
		b.Fatal(err)
	}
	if _, err := br.CreateTopic("s", "t", 1); err != nil {
		b.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 1024)
	for range 1000 {
		if _, err := br.Append("s", "t", 0, payload, nil); err != nil {
			b.Fatal(err)
		}
	}
	c := newVSRConn(br, nil, 0, 0)
	br.mu.Lock() // a logged-in session 1 of fuzzClient
	br.sessions[fuzzClient] = &session{id: 1, vsr: true, client: fuzzClient, number: 1, conn: c}
	c.dialect = vsr.V011
	br.mu.Unlock()
	body := vsr.AppendPoll(nil, &vsr.Poll{Consumer: vsr.Consumer{Kind: vsr.ConsumerSingle, ID: vsr.NumericID(1)}, Stream: vsr.NamedID("s"),
		Topic: vsr.NamedID("t"), Partition: vsr.PartitionID(0), Strategy: vsr.AtOffset(0), Count: 1000})
	h, _ := vsr.DecodeRequestHeader(vsrRequest(vsr.V011, vsr.CodePoll, 1, 1, 0, body), vsr.V012)
	b.SetBytes(1000 * 1024)
	b.ReportAllocs()
	for b.Loop() {
		reply, _ := c.handle(&h, body)
		if len(reply) != 256+16+1000*(256+48+1024) {
			b.Fatalf("reply of %d bytes", len(reply))
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "msgs/s")
}
