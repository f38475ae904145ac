package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"

	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
)

// Spec says what to produce.
type Spec struct {
	Addr, User, Password string
	Stream, Topic        string
	Partitions, Messages int
	Wave                 int
}

// Sent is one manifest line: a message as produced, in a form the checker
// reads without knowing the sink's code. Headers keep the producer's kinds;
// the checker derives the JSON rendering from the upstream table itself.
type Sent struct {
	Wave      int      `json:"wave"`
	Partition int      `json:"partition"`
	Seq       int      `json:"seq"`
	Payload   string   `json:"payload"`
	Headers   []Header `json:"headers,omitempty"`
}

// Header is one user header: Value is a string for "string", base64 for
// "raw", a bool for "bool", a number for the numeric kinds.
type Header struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"`
	Value any    `json:"value"`
}

// Produce creates the stream and topic when missing, sends Messages
// messages to every partition (in order, with headers on most), and writes
// one manifest line per message. It returns how many it sent.
func Produce(ctx context.Context, s Spec, manifest io.Writer) (int, error) {
	if s.Partitions < 1 || s.Messages < 1 {
		return 0, fmt.Errorf("produce: need at least one partition and one message, got %d and %d", s.Partitions, s.Messages)
	}
	c, err := iggyadmin.Dial(s.Addr, s.User, s.Password, "")
	if err != nil {
		return 0, fmt.Errorf("produce: Iggy at %s as %s: %w", s.Addr, s.User, err)
	}
	defer c.Close()
	if err := c.EnsureTopic(s.Stream, s.Topic, s.Partitions); err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	enc := json.NewEncoder(manifest)
	sent := 0
	for p := range s.Partitions {
		for i := range s.Messages {
			if err := ctx.Err(); err != nil {
				return sent, err
			}
			line, entries := message(s.Wave, p, i)
			var headers []byte
			if len(entries) > 0 {
				headers = iggcon.GetHeadersBytes(entries)
			}
			if _, err := c.Append(s.Stream, s.Topic, uint32(p), []byte(line.Payload), headers); err != nil {
				return sent, fmt.Errorf("produce: send to partition %d: %w", p, err)
			}
			if err := enc.Encode(line); err != nil {
				return sent, err
			}
			sent++
		}
	}
	return sent, nil
}

// texts exercise the JSON escaping of payloads.
var texts = []string{`plain`, `quote " and backslash \`, "café ☕ \u2028 line separator", "tab\tand newline\n"}

// message builds message i of a partition: a JSON payload, and headers of
// every common kind on four of five messages (the fifth has none, so its
// record must have no headers field).
func message(wave, partition, i int) (Sent, []iggcon.HeaderEntry) {
	payload, _ := json.Marshal(map[string]any{
		"wave": wave, "partition": partition, "seq": i, "text": texts[i%len(texts)],
		"nested": map[string]any{"list": []any{i, 2.5, nil, i%2 == 0}},
	})
	line := Sent{Wave: wave, Partition: partition, Seq: i, Payload: string(payload)}
	if i%5 == 4 {
		return line, nil
	}
	blob := []byte{0, 1, 0xff, byte(i)}
	ratio := float64(i) / 8
	delta := -int64(i) * 1000
	line.Headers = []Header{
		{"trace-id", "string", fmt.Sprintf("w%d-p%d-%d", wave, partition, i)},
		{"sampled", "bool", i%2 == 0},
		{"seq", "uint32", i},
		{"delta", "int64", delta},
		{"ratio", "double", ratio},
		{"blob", "raw", base64.StdEncoding.EncodeToString(blob)},
	}
	le32 := binary.LittleEndian.AppendUint32(nil, uint32(i))
	le64 := binary.LittleEndian.AppendUint64(nil, uint64(delta))
	f64 := binary.LittleEndian.AppendUint64(nil, math.Float64bits(ratio))
	sampled := byte(0)
	if i%2 == 0 {
		sampled = 1
	}
	entries := []iggcon.HeaderEntry{
		entry("trace-id", iggcon.String, []byte(line.Headers[0].Value.(string))),
		entry("sampled", iggcon.Bool, []byte{sampled}),
		entry("seq", iggcon.Uint32, le32),
		entry("delta", iggcon.Int64, le64),
		entry("ratio", iggcon.Double, f64),
		entry("blob", iggcon.Raw, blob),
	}
	return line, entries
}

func entry(key string, kind iggcon.HeaderKind, value []byte) iggcon.HeaderEntry {
	k, err := iggcon.NewHeaderKeyString(key)
	if err != nil {
		panic(err) // the keys above are constants of valid length
	}
	return iggcon.HeaderEntry{Key: k, Value: iggcon.HeaderValue{Kind: kind, Value: value}}
}
