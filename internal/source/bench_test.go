package source

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// BenchmarkPollThroughGuard reads 1000 messages of 1 KiB per poll, in
// payload bytes per second, through Conn (the SDK's socket goes through the
// guard, which relays request by request) and, in the same run, through the
// bare SDK client: their ratio is the guard's cost.
//
//	go test ./internal/source -run '^$' -bench PollThroughGuard -benchmem
func BenchmarkPollThroughGuard(b *testing.B) {
	br := startBroker(b)
	if _, err := br.CreateStream("app"); err != nil {
		b.Fatal(err)
	}
	if _, err := br.CreateTopic("app", "logs", 1); err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"msg":"` + strings.Repeat("x", 1014) + `"}`)
	for range 1000 {
		if _, err := br.Append("app", "logs", 0, payload, nil); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.Run("guard", func(b *testing.B) {
		c, err := Open(ctx, Config{Address: br.Addr(), Username: "iggy", Password: "iggy"})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		tp, err := c.Topic(ctx, "app", "logs", "bench")
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Join(ctx, tp); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(1000 * len(payload)))
		b.ReportAllocs()
		var dst []batch.Message
		for b.Loop() {
			msgs, _, err := c.Poll(ctx, tp, 0, 0, 1000, dst[:0])
			if err != nil || len(msgs) != 1000 {
				b.Fatalf("poll: %d messages, %v", len(msgs), err)
			}
		}
	})
	b.Run("sdk-direct", func(b *testing.B) {
		cli, err := client.NewIggyClient(client.WithTcp(tcp.WithServerAddress(br.Addr())))
		if err != nil {
			b.Fatal(err)
		}
		defer cli.Close()
		if _, err := cli.LoginUser("iggy", "iggy"); err != nil {
			b.Fatal(err)
		}
		sid, _ := iggcon.NewIdentifier("app")
		tid, _ := iggcon.NewIdentifier("logs")
		gid, _ := iggcon.NewIdentifier("bench-direct")
		if _, err := cli.CreateConsumerGroup(sid, tid, "bench-direct"); err != nil {
			b.Fatal(err)
		}
		if err := cli.JoinConsumerGroup(sid, tid, gid); err != nil {
			b.Fatal(err)
		}
		part := uint32(0)
		b.SetBytes(int64(1000 * len(payload)))
		b.ReportAllocs()
		for b.Loop() {
			polled, err := cli.PollMessages(sid, tid, iggcon.NewGroupConsumer(gid), iggcon.OffsetPollingStrategy(0), 1000, false, &part)
			if err != nil || len(polled.Messages) != 1000 {
				b.Fatalf("poll: %v", err)
			}
		}
	})
}
