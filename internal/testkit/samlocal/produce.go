package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"time"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
	ierror "github.com/apache/iggy/foreign/go/errors"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
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
	c, err := connect(ctx, s.Addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.LoginUser(s.User, s.Password); err != nil {
		return 0, fmt.Errorf("produce: login as %s: %w", s.User, err)
	}
	streamID, topicID, err := ensureTopic(c, s)
	if err != nil {
		return 0, err
	}
	enc := json.NewEncoder(manifest)
	sent := 0
	for p := range s.Partitions {
		msgs := make([]iggcon.IggyMessage, 0, s.Messages)
		lines := make([]Sent, 0, s.Messages)
		for i := range s.Messages {
			line, entries := message(s.Wave, p, i)
			m, err := iggcon.NewIggyMessage([]byte(line.Payload), iggcon.WithUserHeaders(entries))
			if err != nil {
				return sent, fmt.Errorf("produce: message %d: %w", i, err)
			}
			msgs = append(msgs, m)
			lines = append(lines, line)
		}
		if err := ctx.Err(); err != nil {
			return sent, err
		}
		if err := c.SendMessages(streamID, topicID, iggcon.PartitionId(uint32(p)), msgs); err != nil {
			return sent, fmt.Errorf("produce: send to partition %d: %w", p, err)
		}
		for _, l := range lines {
			if err := enc.Encode(l); err != nil {
				return sent, err
			}
		}
		sent += len(msgs)
	}
	return sent, nil
}

// connect dials first: NewIggyClient retries an unreachable address forever.
func connect(ctx context.Context, addr string) (iggcon.Client, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("produce: Iggy at %s: %w", addr, err)
	}
	_ = nc.Close()
	type result struct {
		c   iggcon.Client
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := client.NewIggyClient(client.WithTcp(tcp.WithServerAddress(addr)))
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("produce: connect to %s: %w", addr, r.err)
		}
		return r.c, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("produce: connect to %s: %w", addr, ctx.Err())
	}
}

func ensureTopic(c iggcon.Client, s Spec) (stream, topic iggcon.Identifier, err error) {
	if stream, err = iggcon.NewIdentifier(s.Stream); err != nil {
		return stream, topic, err
	}
	if topic, err = iggcon.NewIdentifier(s.Topic); err != nil {
		return stream, topic, err
	}
	if _, err = c.GetStream(stream); errors.Is(err, ierror.ErrStreamIdNotFound) || errors.Is(err, ierror.ErrStreamNameNotFound) {
		_, err = c.CreateStream(s.Stream)
	}
	if err != nil {
		return stream, topic, fmt.Errorf("produce: stream %s: %w", s.Stream, err)
	}
	td, err := c.GetTopic(stream, topic)
	if errors.Is(err, ierror.ErrTopicIdNotFound) || errors.Is(err, ierror.ErrTopicNameNotFound) {
		_, err = c.CreateTopic(stream, s.Topic, uint32(s.Partitions), iggcon.CompressionAlgorithmNone, iggcon.IggyExpiryNeverExpire, 0, nil)
		if err != nil {
			return stream, topic, fmt.Errorf("produce: create topic %s/%s: %w", s.Stream, s.Topic, err)
		}
		return stream, topic, nil
	}
	if err != nil {
		return stream, topic, fmt.Errorf("produce: topic %s/%s: %w", s.Stream, s.Topic, err)
	}
	if int(td.PartitionsCount) != s.Partitions {
		return stream, topic, fmt.Errorf("produce: topic %s/%s has %d partitions, not %d", s.Stream, s.Topic, td.PartitionsCount, s.Partitions)
	}
	return stream, topic, nil
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
