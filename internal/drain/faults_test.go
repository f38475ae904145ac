package drain_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/faultproxy"
)

// uploaderVia builds an uploader whose S3 traffic goes through url, with a
// short response-header timeout so that stalls become retryable timeouts.
func (w *world) uploaderVia(url, bucket string, attempts int) *s3store.Uploader {
	w.t.Helper()
	client, err := s3store.NewClient(context.Background(), s3store.ClientOptions{
		Region: w.s3.Region, Endpoint: url, AccessKeyID: w.s3.AccessKey, SecretAccessKey: w.s3.SecretKey,
		ResponseHeaderTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return s3store.New(client, s3store.Options{Bucket: bucket, MaxAttempts: attempts, RetryDelay: 5 * time.Millisecond,
		MaxRetryDelay: 50 * time.Millisecond, MultipartThreshold: 16 << 20, PartSize: 5 << 20})
}

// TestS3Faults puts a proxy that fails 30% of requests (500/503, connection
// resets, stalled replies) between the sink and S3, and another that fails
// DynamoDB requests: nothing may be lost or duplicated.
func TestS3AndDynamoFaults(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		s3proxy, err := faultproxy.Start(w.s3.Endpoint, faultproxy.Config{Seed: 7, ErrorRate: 0.1, ResetRate: 0.1, StallRate: 0.1, Stall: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s3proxy.Close()
		ddbproxy, err := faultproxy.Start(w.dynamoEndpoint(), faultproxy.Config{Seed: 8, ErrorRate: 0.1, ResetRate: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		defer ddbproxy.Close()
		w.dynamoURL = ddbproxy.URL()

		w.produce("faults", 4, 300, 200)
		set := w.settings("faults", "faults")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "40"
		cfg := w.config(set)
		rec := newRecordingStore(w.uploaderVia(s3proxy.URL(), cfg.Plugin.Bucket, 10))
		s := w.sink(cfg, app.Options{Objects: rec})
		w.drainUntilQuiet(s, "faults", 30)
		w.checkExactlyOnce(s, "faults", "json_lines")
		w.auditClean(s)
		if c := rec.conflicting(); len(c) > 0 {
			t.Fatalf("keys written with different contents: %v", c)
		}
		st := s3proxy.Stats()
		if st.Errors == 0 || st.Resets == 0 || st.Stalls == 0 {
			t.Fatalf("the S3 proxy injected too little to mean anything: %+v", st)
		}
		if d := ddbproxy.Stats(); d.Errors+d.Resets == 0 {
			t.Fatalf("the DynamoDB proxy injected nothing: %+v", d)
		}
		t.Logf("S3 proxy: %+v; DynamoDB proxy: %+v", st, ddbproxy.Stats())
	})
}

// TestS3AttemptsAndPermanentErrors checks that retries stop at
// max_attempts and that a 403 fails at once with a clear error.
func TestS3AttemptsAndPermanentErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		w.produce("perm", 1, 10, 100)
		proxy, err := faultproxy.Start(w.s3.Endpoint, faultproxy.Config{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer proxy.Close()
		set := w.settings("perm", "perm")
		cfg := w.config(set)

		t.Run("max_attempts", func(t *testing.T) {
			w := w.with(t)
			if err := proxy.Set(faultproxy.Config{Seed: 1, ErrorRate: 1}); err != nil {
				t.Fatal(err)
			}
			before := proxy.Stats().Requests
			s := w.sink(cfg, app.Options{Objects: w.uploaderVia(proxy.URL(), cfg.Plugin.Bucket, 3)})
			_, err := s.Run(context.Background())
			var ue *s3store.Error
			if !errors.As(err, &ue) || ue.Attempts != 3 {
				t.Fatalf("run error %v: want an upload error after 3 attempts", err)
			}
			if n := proxy.Stats().Requests - before; n != 3 {
				t.Fatalf("%d requests reached S3, want exactly max_attempts = 3", n)
			}
			assertNoSecretIn(t, "upload error", err, w.s3.SecretKey, w.password)
		})

		t.Run("forbidden", func(t *testing.T) {
			w := w.with(t)
			if err := proxy.Set(faultproxy.Config{Seed: 1, Forbid: true}); err != nil {
				t.Fatal(err)
			}
			before := proxy.Stats().Requests
			s := w.sink(cfg, app.Options{Objects: w.uploaderVia(proxy.URL(), cfg.Plugin.Bucket, 5)})
			start := time.Now()
			_, err := s.Run(context.Background())
			var ue *s3store.Error
			if !errors.As(err, &ue) || ue.Status != 403 || !strings.Contains(err.Error(), "perm") {
				t.Fatalf("run error %v: want a 403 upload error naming the bucket", err)
			}
			if n := proxy.Stats().Requests - before; n != 1 {
				t.Fatalf("a 403 was tried %d times, want once", n)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("a permanent error took %s", time.Since(start))
			}
			assertNoSecretIn(t, "403 error", err, w.s3.SecretKey, w.password)
		})

		t.Run("healed", func(t *testing.T) {
			w := w.with(t)
			if err := proxy.Set(faultproxy.Config{Seed: 1}); err != nil {
				t.Fatal(err)
			}
			s := w.sink(cfg, app.Options{Objects: w.uploaderVia(proxy.URL(), cfg.Plugin.Bucket, 3)})
			w.drainUntilQuiet(s, "perm", 20)
			w.checkExactlyOnce(s, "perm", "json_lines")
			w.auditClean(s)
		})
	})
}

// TestIggyConnectionDrops closes the connection in the middle of a poll:
// the run fails cleanly and the next one continues.
func TestIggyConnectionDrops(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		w.produce("drop", 2, 300, 150)
		set := w.settings("drop", "drop")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "50"
		set["SINK_BATCH_LENGTH"] = "30"
		s := w.sink(w.config(set), app.Options{})
		broker.CloseOnCommand(100, 1)
		_, err := s.Run(context.Background())
		if !errors.Is(err, source.ErrConnectionLost) {
			t.Fatalf("run error %v, want ErrConnectionLost", err)
		}
		assertNoSecretIn(t, "connection error", err, w.password)
		w.drainUntilQuiet(s, "drop", 20)
		w.checkExactlyOnce(s, "drop", "json_lines")
		w.auditClean(s)
	})
}

// TestIggyUnreachable: a closed port and a server that never answers both
// fail within connect_timeout with an error that names the address.
func TestIggyUnreachable(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		silent, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		go func() {
			for {
				c, err := silent.Accept()
				if err != nil {
					return
				}
				defer c.Close() // accept and say nothing
			}
		}()
		closed, _ := net.Listen("tcp", "127.0.0.1:0")
		closedAddr := closed.Addr().String()
		closed.Close()

		for _, addr := range []string{closedAddr, silent.Addr().String()} {
			set := w.settings("unreach", "unreach")
			set["IGGY_ADDRESS"] = addr
			set["IGGY_CONNECT_TIMEOUT"] = "1s"
			s := w.sink(w.config(set), app.Options{})
			start := time.Now()
			_, err := s.Run(context.Background())
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), addr) {
				t.Fatalf("%s: run error %v, want one naming the address", addr, err)
			}
			if took > 3*time.Second {
				t.Fatalf("%s: failing took %s with connect_timeout 1s", addr, took)
			}
			assertNoSecretIn(t, "unreachable", err, w.password)
		}
	})
}

// TestRetentionGap deletes messages the sink has not read yet: the run
// reports the missing range (summary, marker object) and continues after it.
func TestRetentionGap(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		w.produce("gap", 1, 100, 100)
		s := w.sink(w.config(w.settings("gap", "gap")), app.Options{})
		w.drainUntilQuiet(s, "gap", 10)
		w.produce("gap", 1, 100, 100) // offsets 100..199
		if err := broker.DeleteBelow(w.stream, "gap", 0, 150); err != nil {
			t.Fatal(err)
		}
		// The run writes the partial object 150..199 only once its first
		// message is max_file_age (1ms) old; a run that starts sooner leaves it.
		time.Sleep(5 * time.Millisecond)
		sum, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := sum.Partitions[0]
		if len(p.Gaps) != 1 || p.Gaps[0].First != 100 || p.Gaps[0].Last != 149 {
			t.Fatalf("gaps %+v, want one gap 100..149", p.Gaps)
		}
		if p.Messages != 50 || p.FirstOffset == nil || *p.FirstOffset != 150 || *p.LastOffset != 199 {
			t.Fatalf("wrote %d messages (%+v), want 50 from 150 to 199", p.Messages, p)
		}
		reports := w.auditClean(s)
		if reports[0].GapMarkers != 1 || reports[0].Messages != 150 {
			t.Fatalf("audit: %d gap markers, %d messages; want 1 and 150", reports[0].GapMarkers, reports[0].Messages)
		}
		if !strings.Contains(w.logs.String(), `"first":100,"last":149`) {
			t.Fatalf("the gap is not in the logs")
		}
	})
}

// TestPoisonPayload sends a payload that is not JSON under schema json.
func TestPoisonPayload(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		poison := []byte("{not json")
		setup := func(topic string) {
			w.produce(topic, 1, 10, 80)
			w.appendRaw(topic, 0, poison, nil)
			w.produce(topic, 1, 10, 80)
		}

		t.Run("base64", func(t *testing.T) {
			w := w.with(t)
			setup("poison-b64")
			s := w.sink(w.config(w.settings("poison-b64", "poison-b64")), app.Options{})
			sum, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sum.Partitions[0].InvalidPayloads != 1 || sum.Messages != 21 {
				t.Fatalf("invalid payloads %d, messages %d; want 1 and 21", sum.Partitions[0].InvalidPayloads, sum.Messages)
			}
			found := false
			for _, o := range w.objects(s, "archive/") {
				for _, r := range decode(t, "json_lines", o) {
					if r.Offset == 10 {
						found = string(r.Payload) == `"`+base64.StdEncoding.EncodeToString(poison)+`"`
					}
				}
			}
			if !found {
				t.Fatal("offset 10 is not kept as a base64 string")
			}
		})

		t.Run("fail", func(t *testing.T) {
			w := w.with(t)
			setup("poison-fail")
			set := w.settings("poison-fail", "poison-fail")
			set["SINK_INVALID_PAYLOAD"] = "fail"
			s := w.sink(w.config(set), app.Options{})
			sum, err := s.Run(context.Background())
			if err == nil {
				t.Fatal("a poison payload under invalid_payload=fail did not fail the run")
			}
			for _, want := range []string{w.stream, "poison-fail", "partition 0", "offset 10"} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not name %q", err, want)
				}
			}
			if sum.Messages != 10 || *sum.Partitions[0].Committed != 9 {
				t.Fatalf("wrote %d messages up to %v; want the 10 before the poison", sum.Messages, sum.Partitions[0].Committed)
			}
			w.auditClean(s)
		})
	})
}

// TestRetentionDuringRecovery crashes a run after it recorded an intent for
// offsets 0..59, then lets retention delete part of that range (0..29), or
// all of it and more (0..69), before the next run: the missing messages
// become a reported gap and the rest is still written exactly once.
func TestRetentionDuringRecovery(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		for _, cut := range []uint64{30, 70} {
			t.Run(fmt.Sprintf("deleted-below-%d", cut), func(t *testing.T) {
				w := w.with(t)
				topic := fmt.Sprintf("gap-rec-%d", cut)
				w.produce(topic, 1, 100, 100)
				set := w.settings(topic, topic)
				set["SINK_FILE_ROTATION"] = "messages"
				set["SINK_MAX_MESSAGES_PER_FILE"] = "60"
				cfg := w.config(set)
				crash := func(s drain.Step, _ batch.Partition) error {
					if s == drain.StepIntent {
						return errors.New("injected")
					}
					return nil
				}
				if _, err := w.sink(cfg, app.Options{Hooks: crashAt(crash)}).Run(context.Background()); !errors.Is(err, drain.ErrCrash) {
					t.Fatalf("crashing run: %v", err)
				}
				if err := broker.DeleteBelow(w.stream, topic, 0, cut); err != nil {
					t.Fatal(err)
				}
				s := w.sink(cfg, app.Options{})
				start := time.Now()
				w.drainUntilQuiet(s, topic, 20)
				if took := time.Since(start); took > 15*time.Second {
					t.Fatalf("recovery took %s", took)
				}
				reports := w.auditClean(s)
				if reports[0].GapMarkers != 1 || reports[0].Messages != 100-cut {
					t.Fatalf("audit: %d gap markers, %d messages; want 1 marker (0..%d) and %d messages", reports[0].GapMarkers, reports[0].Messages, cut-1, 100-cut)
				}
				if objs := w.objects(s, "archive/"); objs[0].first != cut {
					t.Fatalf("first object starts at %d, want %d", objs[0].first, cut)
				}
			})
		}
	})
}

// TestMalformedHeadersCounted (issue 15 item 7): a message whose user
// headers cannot be decoded is archived without them; the summary counts
// such messages and names the first offset, and the EMF metrics carry the
// count. Before, the count was kept and never reported.
func TestMalformedHeadersCounted(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		w.hooks(t) // a real server refuses malformed headers on send
		w.produce("badhdr", 1, 5, 80)
		w.appendRaw("badhdr", 0, []byte(`{"n":5}`), []byte{2, 9, 0, 0}) // a key length that runs past the end
		w.produce("badhdr", 1, 3, 80)
		var emf bytes.Buffer
		s := w.sink(w.config(w.settings("badhdr", "badhdr")), app.Options{Hooks: []drain.Hook{&metrics.EMF{W: &emf, Function: "test"}}})
		sum, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := sum.Partitions[0]
		if p.MalformedHeaders != 1 || p.MalformedHeadersAt == nil || *p.MalformedHeadersAt != 5 || p.Messages != 9 {
			t.Fatalf("malformed headers %d at %v, %d messages; want 1 at offset 5 and all 9 archived", p.MalformedHeaders, p.MalformedHeadersAt, p.Messages)
		}
		if !strings.Contains(emf.String(), `"MalformedHeaders":1`) {
			t.Fatalf("the EMF lines do not count the malformed headers:\n%s", emf.String())
		}
	})
}

// TestIggyHoles: Iggy 0.10's offsets can skip numbers after a server
// recovery. Such a hole is not a loss: the sink writes a gap marker whose
// cause says so, leaves it out of GapMessages, and the audit tells it
// from offsets retention deleted — whether the hole falls between two
// messages of one poll or at the start of one.
func TestIggyHoles(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		broker := w.hooks(t)
		const topic = "holes"
		if _, err := broker.CreateStream(w.stream); err != nil {
			t.Fatal(err)
		}
		if _, err := broker.CreateTopic(w.stream, topic, 1); err != nil {
			t.Fatal(err)
		}
		appendN := func(n int) {
			for range n {
				if _, err := broker.Append(w.stream, topic, 0, []byte(`{"msg":"x"}`), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		skip := func(n uint64) {
			if err := broker.SkipOffsets(w.stream, topic, 0, n); err != nil {
				t.Fatal(err)
			}
		}
		appendN(10) // 0..9
		skip(5)
		appendN(10) // 15..24: the hole 10..14 lies inside one poll
		s := w.sink(w.config(w.settings(topic, topic)), app.Options{})
		// Each run writes its partial object only once the object's first
		// message is max_file_age (1ms) old.
		aged := func() { time.Sleep(5 * time.Millisecond) }
		aged()
		sum, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		skip(3)
		appendN(5) // 28..32: the hole 25..27 starts the next run's poll
		aged()
		sum2, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		appendN(10)                                                        // 33..42
		if err := broker.DeleteBelow(w.stream, topic, 0, 36); err != nil { // 33..35 deleted by retention
			t.Fatal(err)
		}
		aged()
		sum3, err := s.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var gaps []drain.Gap
		var lost, holes uint64
		for _, sm := range []*drain.Summary{sum, sum2, sum3} {
			gaps = append(gaps, sm.Partitions[0].Gaps...)
			lost += sm.Partitions[0].GapMessages()
			holes += sm.Partitions[0].HoleOffsets()
		}
		want := []drain.Gap{{First: 10, Last: 14, Cause: drain.CauseIggyHole}, {First: 25, Last: 27, Cause: drain.CauseIggyHole}, {First: 33, Last: 35, Cause: drain.CauseRetention}}
		if len(gaps) != len(want) {
			t.Fatalf("gaps %+v, want %+v", gaps, want)
		}
		for i := range want {
			if gaps[i].First != want[i].First || gaps[i].Last != want[i].Last || gaps[i].Cause != want[i].Cause {
				t.Fatalf("gap %d = %+v, want %+v", i, gaps[i], want[i])
			}
		}
		if lost != 3 || holes != 8 {
			t.Fatalf("GapMessages %d, HoleOffsets %d; want 3 lost (33..35) and 8 skipped", lost, holes)
		}
		r := w.auditClean(s)
		if r[0].GapMarkers != 3 || r[0].IggyHoles != 2 || r[0].Messages != 20+5+7 {
			t.Fatalf("audit: %d gap markers, %d of them holes, %d messages; want 3, 2, 32", r[0].GapMarkers, r[0].IggyHoles, r[0].Messages)
		}
	})
}
