package iggytest_test

import (
	"bytes"
	"testing"

	iggcon "github.com/apache/iggy/foreign/go/contracts"
)

// BenchmarkPollThroughSDK polls 1000 × 1 KiB messages per call with the real SDK.
func BenchmarkPollThroughSDK(b *testing.B) {
	tg := newTarget(b)
	br := tg.hooks(b)
	const perPoll, size = 1000, 1024
	if _, err := br.CreateStream("bench"); err != nil {
		b.Fatal(err)
	}
	if _, err := br.CreateTopic("bench", "t", 1); err != nil {
		b.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), size)
	for range perPoll {
		if _, err := br.Append("bench", "t", 0, payload, nil); err != nil {
			b.Fatal(err)
		}
	}
	c := tg.login(b)
	sid, tid := id(b, "bench"), id(b, "t")
	consumer := iggcon.NewSingleConsumer(id(b, uint32(1)))
	p0 := ptr(uint32(0))
	b.SetBytes(perPoll * size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pm, err := c.PollMessages(sid, tid, consumer, iggcon.OffsetPollingStrategy(0), perPoll, false, p0)
		if err != nil {
			b.Fatal(err)
		}
		if len(pm.Messages) != perPoll {
			b.Fatalf("polled %d messages, want %d", len(pm.Messages), perPoll)
		}
	}
	b.ReportMetric(float64(perPoll*b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkSendThroughSDK sends batches of 100 × 1 KiB messages with the real SDK.
func BenchmarkSendThroughSDK(b *testing.B) {
	tg := newTarget(b)
	tg.hooks(b)
	c := tg.login(b)
	f := newTopic(b, c, 1)
	const perSend, size = 100, 1024
	msgs := make([]iggcon.IggyMessage, perSend)
	for i := range msgs {
		msgs[i] = msg(b, string(bytes.Repeat([]byte("y"), size)))
	}
	b.SetBytes(perSend * size)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.SendMessages(f.streamID, f.topicID, iggcon.PartitionId(0), msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(perSend*b.N)/b.Elapsed().Seconds(), "msgs/s")
}
