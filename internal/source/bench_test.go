package source

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsrconn"
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

// BenchmarkPollByProtocol reads 8 MiB of 1 KiB messages from one partition
// of the same in-repo broker, in polls of 1000 messages, through Conn with
// each protocol: the Go SDK v0.8.0 behind the guard (0.8) and our own VSR
// client (0.9, 0.10). The broker runs as its own process (testbroker), so
// that the allocations counted are the client's alone. MB/s is payload
// bytes; allocs/msg is a whole read's allocations over its messages.
//
//	go test ./internal/source -run '^$' -bench PollByProtocol -benchmem
func BenchmarkPollByProtocol(b *testing.B) {
	const messages = 8192
	addr := startBrokerProcess(b)
	ctx := context.Background()
	payload := []byte(`{"msg":"` + strings.Repeat("x", 1014) + `"}`)
	produce(b, addr, "app", "logs", messages, payload)
	for _, proto := range []string{Protocol08, Protocol09, Protocol010} {
		b.Run(proto, func(b *testing.B) {
			c, err := Open(ctx, Config{Address: addr, Username: "iggy", Password: "iggy", Protocol: proto})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			tp, err := c.Topic(ctx, "app", "logs", "bench-"+proto)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Join(ctx, tp); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(messages * len(payload)))
			b.ReportAllocs()
			var dst []batch.Message
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				for next := uint64(0); next < messages; {
					msgs, _, err := c.Poll(ctx, tp, 0, next, 1000, dst[:0])
					if err != nil || len(msgs) == 0 {
						b.Fatalf("poll at %d: %d messages, %v", next, len(msgs), err)
					}
					next = msgs[len(msgs)-1].Offset + 1
					dst = msgs
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*messages), "allocs/msg")
		})
	}
}

// startBrokerProcess builds and starts cmd/testbroker on a free loopback
// port, and stops it by its PID when the benchmark ends.
func startBrokerProcess(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "testbroker")
	if out, err := exec.Command("go", "build", "-o", bin, "../iggytest/cmd/testbroker").CombinedOutput(); err != nil {
		b.Fatalf("build testbroker: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("testbroker printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// produce creates stream/topic (one partition) and sends n copies of
// payload in batches of 1000.
func produce(b *testing.B, addr, stream, topic string, n int, payload []byte) {
	b.Helper()
	ctx := context.Background()
	c, err := vsrconn.Dial(ctx, vsrconn.Config{Address: addr, Username: "iggy", Password: "iggy", Dialect: vsr.V011})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateStream(ctx, stream); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, vsr.NamedID(stream), topic, 1, nil); err != nil {
		b.Fatal(err)
	}
	batch := make([]vsrconn.Outgoing, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, vsrconn.Outgoing{Payload: payload})
		if len(batch) == cap(batch) || i == n-1 {
			if _, _, err := c.Send(ctx, vsr.NamedID(stream), vsr.NamedID(topic), 0, batch, nil); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}
