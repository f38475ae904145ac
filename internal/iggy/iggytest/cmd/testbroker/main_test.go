package main

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/iggy/foreign/go/client"
	"github.com/apache/iggy/foreign/go/client/tcp"
	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
)

func TestParseSeed(t *testing.T) {
	tests := []struct {
		in      string
		want    seedSpec
		wantErr string
	}{
		{in: "app/logs:4:1000", want: seedSpec{"app", "logs", 4, 1000}},
		{in: "a/b:1:0", want: seedSpec{"a", "b", 1, 0}},
		{in: "app/logs:4", wantErr: "STREAM/TOPIC:PARTITIONS:MESSAGES"},
		{in: "applogs:4:10", wantErr: "STREAM/TOPIC before"},
		{in: "a/b/c:4:10", wantErr: "STREAM/TOPIC before"},
		{in: "/logs:4:10", wantErr: "STREAM/TOPIC before"},
		{in: "app/logs:0:10", wantErr: "partitions must be 1..1000"},
		{in: "app/logs:x:10", wantErr: "partitions must be 1..1000"},
		{in: "app/logs:2:-1", wantErr: "messages must be"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSeed(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseSeed = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestServeSeededAndDrain is the acceptance scenario: seed app/logs:4:1000, log in as
// iggy/iggy, see 4 partitions and 1000 messages, drain them through a consumer group.
func TestServeSeededAndDrain(t *testing.T) {
	log.SetOutput(io.Discard) // the SDK logs each login's metadata check
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-seed", "app/logs:4:1000", "-seed", "other/t:1:3"}, pw)
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the printed address: %v (run: %v)", err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	addr := strings.TrimSpace(line)

	c, err := client.NewIggyClient(client.WithTcp(tcp.WithServerAddress(addr)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.LoginUser("iggy", "iggy"); err != nil {
		t.Fatalf("login: %v", err)
	}
	sid, _ := iggcon.NewIdentifier("app")
	tid, _ := iggcon.NewIdentifier("logs")
	td, err := c.GetTopic(sid, tid)
	if err != nil {
		t.Fatal(err)
	}
	if len(td.Partitions) != 4 || td.MessagesCount != 1000 {
		t.Fatalf("topic has %d partitions and %d messages, want 4 and 1000", len(td.Partitions), td.MessagesCount)
	}
	if _, err := c.CreateConsumerGroup(sid, tid, "demo"); err != nil {
		t.Fatal(err)
	}
	gid, _ := iggcon.NewIdentifier("demo")
	if err := c.JoinConsumerGroup(sid, tid, gid); err != nil {
		t.Fatal(err)
	}
	total := 0
	for empty := 0; empty < 4; {
		pm, err := c.PollMessages(sid, tid, iggcon.NewGroupConsumer(gid), iggcon.NextPollingStrategy(), 100, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(pm.Messages) == 0 {
			empty++
			continue
		}
		empty = 0
		total += len(pm.Messages)
	}
	if total != 1000 {
		t.Fatalf("drained %d messages, want 1000", total)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("testbroker did not stop after cancellation")
	}
}

func TestRunRejectsBadSeed(t *testing.T) {
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-seed", "nonsense"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Fatalf("run = %v, want an error naming the bad seed", err)
	}
}

// TestServeProtocol pins the broker to 0.9: a VSR client logs in and reads the
// seeded topic; an unknown protocol is refused.
func TestServeProtocol(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-protocol", "0.9", "-seed", "app/logs:2:10"}, pw)
		_ = pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the printed address: %v (run: %v)", err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	nc, err := net.DialTimeout("tcp", strings.TrimSpace(line), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	client := vsr.U128From(42)
	exchange := func(h vsr.RequestHeader, body []byte) (vsr.ReplyHeader, []byte) {
		t.Helper()
		h.Size, h.Client = uint32(vsr.HeaderSize+len(body)), client
		if _, err := nc.Write(append(vsr.AppendRequestHeader(nil, vsr.V011, &h), body...)); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		hdr := make([]byte, vsr.HeaderSize)
		if _, err := io.ReadFull(nc, hdr); err != nil {
			t.Fatal(err)
		}
		rh, err := vsr.DecodeReplyHeader(hdr, vsr.V011)
		if err != nil {
			t.Fatalf("reply: %v", err)
		}
		out := make([]byte, rh.Size-vsr.HeaderSize)
		if _, err := io.ReadFull(nc, out); err != nil {
			t.Fatal(err)
		}
		return rh, out
	}
	login := vsr.AppendLogin(nil, vsr.V011, &vsr.Login{Version: vsr.V011.Version(), SDKName: "test", SDKVersion: "1", Username: "iggy", Password: "iggy"})
	rh, out := exchange(vsr.RequestHeader{Operation: vsr.OpRegister}, login)
	payload, err := vsr.SplitResult(out)
	if err != nil || rh.Status != 0 {
		t.Fatalf("login: status %d, %v", rh.Status, err)
	}
	lr, err := vsr.DecodeLoginReply(payload)
	if err != nil || lr.ServerName != "0.9.0" {
		t.Fatalf("login reply %+v, %v", lr, err)
	}
	_, out = exchange(vsr.RequestHeader{Operation: vsr.OpNonReplicated, Code: vsr.CodeGetTopic, Session: lr.Session, Request: 1},
		vsr.AppendTopicRef(nil, vsr.NamedID("app"), vsr.NamedID("logs")))
	tp, ok, err := vsr.DecodeTopic(out, vsr.V011)
	if err != nil || !ok || len(tp.Partitions) != 2 || tp.MessagesCount != 10 {
		t.Fatalf("topic %+v, %v, %v", tp, ok, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-protocol", "0.7"}, io.Discard); err == nil || !strings.Contains(err.Error(), "0.7") {
		t.Fatalf("run with protocol 0.7 = %v, want an error naming it", err)
	}
}
