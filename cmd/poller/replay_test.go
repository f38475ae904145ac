package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/archive"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/ops"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// TestReplayRestoresTopic archives a topic, replays it into a new one with
// poller replay, and checks what a user restoring a topic would: the same
// messages, partition by partition, at the same offsets, once (a second
// replay produces nothing); and the restored topic archived again gives
// the same records (offset, headers, payload) as the first archive.
func TestReplayRestoresTopic(t *testing.T) {
	for _, tc := range []struct {
		format, compression string
	}{{"json_lines", "none"}, {"json_array", "zstd"}, {"parquet", "none"}} {
		t.Run(tc.format+"-"+tc.compression, func(t *testing.T) {
			st := newStack(t, 150)
			st.setenv(t)
			t.Setenv("SINK_OUTPUT_FORMAT", tc.format)
			t.Setenv("SINK_COMPRESSION", tc.compression)
			t.Setenv("SINK_INCLUDE_HEADERS", "true")
			var out, errb bytes.Buffer
			if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
				t.Fatalf("once: exit %d: %s", code, errb.String())
			}
			out.Reset()
			if code := run([]string{"replay", "-to-topic", "restored", "-json"}, nil, &out, &errb); code != 0 {
				t.Fatalf("replay: exit %d:\n%s\n%s", code, out.String(), errb.String())
			}
			var sum ops.ReplaySummary
			if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
				t.Fatalf("the summary: %v\n%s", err, out.String())
			}
			if sum.Replayed != 150 || !sum.Created || len(sum.Partitions) != 3 {
				t.Fatalf("summary: %+v", sum)
			}
			for _, p := range sum.Partitions {
				if !p.Aligned || p.Error != "" || p.Position == nil || *p.Position != 49 {
					t.Fatalf("partition %d: %+v", p.Partition, p)
				}
			}
			compareTopics(t, st, "logs", "restored", map[bool]timeKept{true: timeExact, false: timeSeconds}[tc.format == "parquet"])

			// Run again: the target holds it all, nothing is produced.
			out.Reset()
			if code := run([]string{"replay", "-to-topic", "restored", "-json"}, nil, &out, &errb); code != 0 {
				t.Fatalf("second replay: exit %d:\n%s", code, errb.String())
			}
			var again ops.ReplaySummary
			if err := json.Unmarshal(out.Bytes(), &again); err != nil || again.Replayed != 0 {
				t.Fatalf("a second replay produced %d messages (%v):\n%s", again.Replayed, err, out.String())
			}

			// The restored topic archived again: the same records.
			t.Setenv("SINK_TOPICS", "restored")
			t.Setenv("SINK_PREFIX", "again")
			if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
				t.Fatalf("once on the restored topic: exit %d: %s", code, errb.String())
			}
			first, second := archivedRecords(t, st, "p/app/logs/", tc.format, tc.compression), archivedRecords(t, st, "again/app/restored/", tc.format, tc.compression)
			if len(first) != 150 || len(second) != len(first) {
				t.Fatalf("archived %d records, then %d from the restored topic", len(first), len(second))
			}
			for k, r := range first {
				r2, ok := second[k]
				if !ok || r2.Offset != r.Offset || !bytes.Equal(r2.Payload, r.Payload) || !bytes.Equal(r2.Headers, r.Headers) {
					t.Fatalf("%s: archived %+v, then %+v", k, r, r2)
				}
			}
		})
	}
}

// compareTopics reads both topics with a plain consumer and compares them
// message by message.
// timeKept is how much of the message time an archive keeps.
type timeKept int

const (
	timeSeconds timeKept = iota // JSON records
	timeExact                   // Parquet
	timeNone                    // include_metadata = false: the target's own time
)

func compareTopics(t *testing.T, st *stack, from, to string, kept timeKept) {
	exactTime := kept == timeExact
	t.Helper()
	ctx := context.Background()
	c, err := source.Open(ctx, source.Config{Address: st.broker.Addr(), Username: "iggy", Password: "iggy"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func(topic string, p uint32) []batch.Message {
		tp, err := c.Topic(ctx, "app", topic, "reader")
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := c.Read(ctx, tp, p, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	for p := range uint32(3) {
		src, dst := read(from, p), read(to, p)
		if len(src) == 0 || len(dst) != len(src) {
			t.Fatalf("partition %d: %d messages, restored %d", p, len(src), len(dst))
		}
		for i := range src {
			s, d := src[i], dst[i]
			want := s.Timestamp
			if !exactTime && d.OriginTimestamp != want {
				want -= want % 1_000_000 // JSON records keep seconds (error objects' lines keep µs)
			}
			sameHeaders := headerText(t, d.Headers) == headerText(t, s.Headers)
			if exactTime {
				// Parquet keeps header values as text (docs/restore.md).
				sameHeaders = headerValues(t, d.Headers) == headerValues(t, s.Headers)
			}
			if kept == timeNone {
				want = d.OriginTimestamp
			}
			if d.Offset != s.Offset || !bytes.Equal(d.Payload, s.Payload) || d.OriginTimestamp != want || !sameHeaders {
				t.Fatalf("partition %d offset %d: restored offset %d payload %q origin %d headers %s; archived payload %q time %d headers %s",
					p, s.Offset, d.Offset, d.Payload, d.OriginTimestamp, headerText(t, d.Headers), s.Payload, want, headerText(t, s.Headers))
			}
		}
	}
}

// headerText renders headers as the JSON records do: kinds aside, what a
// reader of the archive sees.
func headerText(t *testing.T, h []byte) string {
	t.Helper()
	enc, err := batch.NewEncoder(batch.Partition{Stream: "s", Topic: "t"}, batch.Options{Format: batch.FormatJSONLines, IncludeHeaders: true, Schema: batch.SchemaText})
	if err != nil {
		t.Fatal(err)
	}
	line, err := enc.AppendRecord(nil, &batch.Message{Headers: h}, true)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}

// headerValues is headerText with every value as text, as Parquet keeps
// them.
func headerValues(t *testing.T, h []byte) string {
	t.Helper()
	var rec struct{ Headers map[string]any }
	if err := json.Unmarshal([]byte(headerText(t, h)), &rec); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(rec.Headers) // fmt sorts map keys
}

// archivedRecords reads every object under prefix: "partition/offset" ->
// record (headers rendered as the JSON records do).
func archivedRecords(t *testing.T, st *stack, prefix, format, compression string) map[string]archive.Record {
	t.Helper()
	return archivedRecordsOf(t, st.s3, prefix, format, compression)
}

func archivedRecordsOf(t *testing.T, s3srv *testenv.S3, prefix, format, compression string) map[string]archive.Record {
	t.Helper()
	l := archive.Layout{Format: batch.Format(format), Compression: batch.Compression(compression), Schema: batch.SchemaJSON, Metadata: true, Headers: true}
	out := map[string]archive.Record{}
	eachObject(t, s3srv, prefix, func(key string, name keys.Name, body []byte) {
		recs, err := archive.Decode(body, l, name.Last-name.First+1)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		for _, r := range recs {
			r.Headers = []byte(headerText(t, r.Headers))
			out[fmt.Sprintf("%d/%d", name.Partition, r.Offset)] = r
		}
	})
	if len(out) == 0 {
		t.Fatalf("no records under %s", prefix)
	}
	return out
}

// eachObject calls fn with every data object under prefix, in key order.
func eachObject(t *testing.T, s3srv *testenv.S3, prefix string, fn func(key string, name keys.Name, body []byte)) {
	t.Helper()
	ctx := context.Background()
	client := s3srv.Client(t)
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("poller"), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		name, ok := keys.ParseName(*o.Key)
		if !ok || name.Gap {
			continue
		}
		obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("poller"), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		if _, err := body.ReadFrom(obj.Body); err != nil {
			t.Fatal(err)
		}
		obj.Body.Close()
		fn(*o.Key, name, body.Bytes())
	}
}

// TestReplayPythonRoundTrip produces with the released Python client
// (apache-iggy 0.9.0, payloads and headers) into the broker or a real 0.9
// server, archives in each output format, replays into a new topic, and
// reads it back with that client: the same payloads, headers, partitions
// and order (raw objects hold no headers); the restored topic archived
// again gives the same records as the first archive.
func TestReplayPythonRoundTrip(t *testing.T) {
	py := testenv.PyIggy(t)
	var admin iggyadmin.Admin
	user, password := "iggy", "iggy"
	if real := iggyadmin.FromEnv(t); real != nil {
		if real.Speaks != "0.9" {
			t.Skipf("the Python client speaks 0.9; the server speaks %s", real.Speaks)
		}
		admin, user, password = real, real.Username, real.Password
	} else {
		b, err := iggytest.Start(iggytest.WithProtocol("0.9"), iggytest.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		admin = b
	}
	const parts, per = 3, 60
	stream := fmt.Sprintf("pyreplay-%d", time.Now().UnixNano())
	if _, err := admin.CreateStream(stream); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic(stream, "orders", parts); err != nil {
		t.Fatal(err)
	}
	python := func(args ...string) map[string][]pyMessage {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, append([]string{filepath.Join("testdata", "py_roundtrip.py")}, args...)...)
		cmd.Env = append(os.Environ(), "IGGY_USERNAME="+user, "IGGY_PASSWORD="+password)
		var got map[string][]pyMessage
		testenv.PyJSON(t, cmd, &got)
		return got
	}
	sent := python("produce", admin.Addr(), stream, "orders", strconv.Itoa(parts), strconv.Itoa(per))
	s3srv := testenv.StartVersity(t)
	s3srv.CreateBucket(t, "poller")
	moto := testenv.StartMoto(t)
	for _, kv := range []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=moto", "AWS_SECRET_ACCESS_KEY=moto-secret", "AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_DYNAMODB=" + moto.Endpoint,
		"SINK_BUCKET=poller", "SINK_ENDPOINT=" + s3srv.Endpoint, "SINK_ACCESS_KEY_ID=" + s3srv.AccessKey, "SINK_SECRET_ACCESS_KEY=" + s3srv.SecretKey,
		"SINK_STREAM=" + stream, "SINK_FILE_ROTATION=messages", "SINK_MAX_MESSAGES_PER_FILE=25", "SINK_MAX_FILE_AGE=1ms",
		"SINK_LEASE_DURATION=5s", "SINK_INCLUDE_HEADERS=true", "IGGY_ADDRESS=" + admin.Addr(), "IGGY_USERNAME=" + user, "IGGY_PASSWORD=" + password,
	} {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	for _, tc := range []struct{ format, compression string }{{"json_lines", "none"}, {"json_array", "gzip"}, {"raw", "zstd"}, {"parquet", "none"}} {
		t.Run(tc.format, func(t *testing.T) {
			restored := "restored-" + tc.format
			t.Setenv("SINK_OUTPUT_FORMAT", tc.format)
			t.Setenv("SINK_COMPRESSION", tc.compression)
			t.Setenv("SINK_TOPICS", "orders")
			t.Setenv("SINK_PREFIX", tc.format)
			t.Setenv("SINK_CONSUMER_GROUP", "sink-"+tc.format)
			var out, errb bytes.Buffer
			if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
				t.Fatalf("once: exit %d: %s", code, errb.String())
			}
			if code := run([]string{"replay", "-to-topic", restored}, nil, &out, &errb); code != 0 {
				t.Fatalf("replay: exit %d:\n%s\n%s", code, out.String(), errb.String())
			}
			got := python("read", admin.Addr(), stream, restored, strconv.Itoa(parts))
			for p := range parts {
				key := strconv.Itoa(p)
				if len(got[key]) != per {
					t.Fatalf("partition %d: read back %d messages, sent %d", p, len(got[key]), per)
				}
				for i, m := range got[key] {
					w := sent[key][i]
					if m.Offset != w.Offset || m.Payload != w.Payload {
						t.Fatalf("partition %d message %d: offset %d payload %s; sent %d %s", p, i, m.Offset, m.Payload, w.Offset, w.Payload)
					}
					if tc.format == "raw" {
						continue // raw objects hold payloads only
					}
					if fmt.Sprint(m.Headers) != fmt.Sprint(w.Headers) {
						if tc.format != "parquet" || fmt.Sprint(textValues(m.Headers)) != fmt.Sprint(textValues(w.Headers)) {
							t.Fatalf("partition %d offset %d: headers %v, sent %v", p, m.Offset, m.Headers, w.Headers)
						}
					}
				}
			}
			t.Setenv("SINK_TOPICS", restored)
			t.Setenv("SINK_PREFIX", tc.format+"-again")
			if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
				t.Fatalf("once on the restored topic: exit %d: %s", code, errb.String())
			}
			if tc.format == "raw" {
				// No offsets in raw records: the objects of each range hold
				// the same payloads.
				first := rawPayloads(t, s3srv, tc.format+"/"+stream+"/orders/", tc.compression)
				second := rawPayloads(t, s3srv, tc.format+"-again/"+stream+"/"+restored+"/", tc.compression)
				if len(first) == 0 || fmt.Sprint(first) != fmt.Sprint(second) {
					t.Fatalf("raw objects by name: archived %d, then %d; they differ", len(first), len(second))
				}
				return
			}
			first := archivedRecordsOf(t, s3srv, tc.format+"/"+stream+"/orders/", tc.format, tc.compression)
			second := archivedRecordsOf(t, s3srv, tc.format+"-again/"+stream+"/"+restored+"/", tc.format, tc.compression)
			if len(first) != parts*per || len(second) != len(first) {
				t.Fatalf("archived %d records, then %d from the restored topic", len(first), len(second))
			}
			for k, r := range first {
				if r2, ok := second[k]; !ok || r2.Offset != r.Offset || !bytes.Equal(r2.Payload, r.Payload) || !bytes.Equal(r2.Headers, r.Headers) {
					t.Fatalf("%s: archived %+v, then %+v", k, r, r2)
				}
			}
		})
	}
}

type pyMessage struct {
	Offset  uint64         `json:"offset"`
	Payload string         `json:"payload"`
	Headers map[string]any `json:"headers"`
}

// textValues is headers with every value as text, as Parquet keeps them.
func textValues(h map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// TestReplayIncludeErrors: the records an error object holds
// (invalid_payload = "error_object") are left out and counted, or with
// -include-errors replayed in their place, with their own bytes.
func TestReplayIncludeErrors(t *testing.T) {
	// Without include_metadata the records hold no offsets: the error
	// object's offsets place the data object's records.
	for _, meta := range []string{"true", "false"} {
		t.Run("include_metadata="+meta, func(t *testing.T) {
			st := newStack(t, 30)
			st.setenv(t)
			t.Setenv("SINK_INVALID_PAYLOAD", "error_object")
			t.Setenv("SINK_INCLUDE_HEADERS", "true")
			t.Setenv("SINK_INCLUDE_METADATA", meta)
			bad := [][]byte{[]byte(`{"broken":`), {0xff, 0xfe, '{'}, []byte("plain text")}
			for _, p := range bad {
				if _, err := st.broker.Append("app", "logs", 1, p, nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.broker.Append("app", "logs", 1, []byte(`{"after":true}`), nil); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if code := run([]string{"once"}, nil, &out, &errb); code != 0 {
				t.Fatalf("once: exit %d: %s", code, errb.String())
			}
			replayInto := func(topic string, args ...string) ops.ReplaySummary {
				t.Helper()
				out.Reset()
				if code := run(append([]string{"replay", "-to-topic", topic, "-json"}, args...), nil, &out, &errb); code != 0 {
					t.Fatalf("replay %v: exit %d:\n%s\n%s", args, code, out.String(), errb.String())
				}
				var sum ops.ReplaySummary
				if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
					t.Fatal(err)
				}
				return sum
			}
			without := replayInto("without-errors")
			if without.Replayed != 30+1 || without.Partitions[1].Absent != 3 || without.Partitions[1].Aligned {
				t.Fatalf("without -include-errors: %+v", without)
			}
			with := replayInto("with-errors", "-include-errors")
			if with.Replayed != 34 || with.Partitions[1].Absent != 0 {
				t.Fatalf("with -include-errors: %+v", with)
			}
			compareTopics(t, st, "logs", "with-errors", map[string]timeKept{"true": timeSeconds, "false": timeNone}[meta])
		})
	}
}

// TestReplayKill9 kills `poller replay` with SIGKILL three times while it
// produces (each time once the target has grown), then runs it to the
// end: every archived message is in the target once, in order, at its
// archived offset. On the broker or a real server (IGGY_TEST_ADDRESS).
func TestReplayKill9(t *testing.T) {
	st := newKillStack(t, 6000)
	bin := buildPoller(t)
	env := append(os.Environ(), st.env...)
	for i := 0; ; i++ {
		once := exec.Command(bin, "once")
		once.Env = env
		if out, err := once.CombinedOutput(); err != nil {
			t.Fatalf("once: %v\n%s", err, out)
		}
		if off, ok := st.iggy.GroupOffset(st.stream, "logs", "iggy-connect-sink-s3", 2); ok && off == 1999 {
			break
		}
		if i > 200 {
			t.Fatal("the archive did not catch up")
		}
	}
	conn := openFromEnv(t, st.env)
	targetEnd := func() uint64 {
		tp, err := conn.Topic(context.Background(), st.stream, "restored", "reader")
		if err != nil {
			return 0
		}
		if err := conn.Refresh(context.Background(), tp); err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, p := range tp.Partitions {
			n += p.MessagesCount
		}
		return n
	}
	args := []string{"replay", "-to-topic", "restored", "-chunk-messages", "40", "-parallel", "2"}
	last := uint64(0)
	var runs bytes.Buffer // what the replays said, shown when the test fails
	var runsMu sync.Mutex
	t.Cleanup(func() {
		if t.Failed() {
			runsMu.Lock()
			t.Logf("the replays' output:\n%s", runs.String())
			runsMu.Unlock()
		}
	})
	start := func() (*exec.Cmd, chan struct{}) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out := &lockedWriter{w: &runs, mu: &runsMu}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		return cmd, exited
	}
	for i := 0; i < 3; i++ {
		cmd, exited := start()
		waitFor(t, 30*time.Second, func() bool {
			select {
			case <-exited:
				// The killed run's leases had not expired yet: this run left
				// those partitions. Start another.
				time.Sleep(300 * time.Millisecond)
				cmd, exited = start()
			default:
			}
			return targetEnd() > last
		})
		cmd.Process.Kill()
		<-exited
		last = targetEnd()
		t.Logf("kill %d: the target holds %d of 6000", i, last)
		if last >= 6000 {
			t.Fatalf("kill %d came after the replay was done; the test needs more data", i)
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replay after the kills: %v\n%s", err, out)
		}
		time.Sleep(300 * time.Millisecond) // the killed run's leases expire after 1s
	}
	ctx := context.Background()
	src, err := conn.Topic(ctx, st.stream, "logs", "reader")
	if err != nil {
		t.Fatal(err)
	}
	dst, err := conn.Topic(ctx, st.stream, "restored", "reader")
	if err != nil {
		t.Fatal(err)
	}
	for p := range uint32(3) {
		want, got := readPartition(t, conn, src, p), readPartition(t, conn, dst, p)
		if len(want) != 2000 || len(got) != len(want) {
			t.Fatalf("partition %d: %d archived messages, %d in the target", p, len(want), len(got))
		}
		for i := range want {
			if got[i].Offset != want[i].Offset || !bytes.Equal(got[i].Payload, want[i].Payload) {
				t.Fatalf("partition %d: target message %d is offset %d %q, want offset %d %q", p, i, got[i].Offset, got[i].Payload, want[i].Offset, want[i].Payload)
			}
		}
	}
}

// openFromEnv connects as the poller's environment says.
func openFromEnv(t *testing.T, env []string) *source.Conn {
	t.Helper()
	cfg := source.Config{Username: "iggy", Password: "iggy", Protocol: "auto", ConnectTimeout: 5 * time.Second}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "IGGY_ADDRESS":
			cfg.Address = v
		case "IGGY_USERNAME":
			cfg.Username = v
		case "IGGY_PASSWORD":
			cfg.Password = v
		case "IGGY_PROTOCOL":
			cfg.Protocol = v
		}
	}
	c, err := source.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// readPartition reads a whole partition as a plain consumer.
func readPartition(t *testing.T, c *source.Conn, tp *source.Topic, p uint32) []batch.Message {
	t.Helper()
	var out []batch.Message
	for at := uint64(0); ; {
		msgs, err := c.Read(context.Background(), tp, p, at, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return out
		}
		out = append(out, msgs...)
		at = msgs[len(msgs)-1].Offset + 1
	}
}

// TestReplayBadFlags: a bad replay flag is bad usage (exit 2), named.
func TestReplayBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-since", "yesterday"}, `-since "yesterday": want an RFC 3339 time`},
		{[]string{"-partitions", "0,x"}, `-partitions "0,x": "x" is not a partition id`},
		{[]string{"-partitions", "0,2,0"}, `-partitions "0,2,0": 0 is named twice`},
		{[]string{"-from-offset", "9", "-to-offset", "3"}, "-from-offset 9 is after -to-offset 3"},
		{[]string{"-parallel", "0"}, "-parallel 0: want at least 1"},
		{[]string{"-generation", "-1"}, `-generation "-1": want a generation number`},
	} {
		var out, errb bytes.Buffer
		if code := run(append([]string{"replay"}, tc.args...), nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("replay %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// rawPayloads reads every raw object under prefix: its name (partition and
// offsets) -> its payloads, as text.
func rawPayloads(t *testing.T, s3srv *testenv.S3, prefix, compression string) map[string][]string {
	t.Helper()
	l := archive.Layout{Format: batch.FormatRaw, Compression: batch.Compression(compression), Schema: batch.SchemaJSON}
	out := map[string][]string{}
	eachObject(t, s3srv, prefix, func(key string, name keys.Name, body []byte) {
		recs, err := archive.Decode(body, l, name.Last-name.First+1)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		k := fmt.Sprintf("%d/%d-%d", name.Partition, name.First, name.Last)
		for _, r := range recs {
			out[k] = append(out[k], string(r.Payload))
		}
	})
	return out
}

// lockedWriter serializes writes of several processes into one buffer.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (lw *lockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}
