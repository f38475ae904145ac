package drain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iggcon "github.com/apache/iggy/foreign/go/contracts"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/metrics"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/parquetread"
)

// variedPayload is a log record whose shape exercises the inference: an
// integer, a string, a float, a bool, a struct holding a list, a list of
// strings, a field that is an integer in some records and a float in
// others (DOUBLE when both meet in an object), and one that is an integer
// or a string (a JSON text column when both meet).
func variedPayload(p, n int) []byte {
	score := fmt.Sprint(n % 50)
	if n%3 == 0 {
		score = fmt.Sprintf("%d.25", n%50)
	}
	mixed := fmt.Sprint(n)
	if n%4 == 3 {
		mixed = fmt.Sprintf(`"v%d"`, n)
	}
	return fmt.Appendf(nil, `{"n":%d,"level":"%s","lat":%d.5,"ok":%t,"ctx":{"user":"u%d","ids":[%d,%d]},"tags":["p%d","t%d"],"score":%s,"mixed":%s,"msg":"request %d served in partition %d"}`,
		n, []string{"INFO", "WARN", "ERROR"}[n%3], n%1000, n%2 == 0, n%7, n, n+1, p, n%5, score, mixed, n, p)
}

// sampleHeaders are the user headers every test message carries.
func sampleHeaders(n int) []byte {
	return iggcon.GetHeadersBytes([]iggcon.HeaderEntry{
		{Key: iggcon.HeaderKey{Kind: iggcon.String, Value: []byte("content-type")}, Value: iggcon.HeaderValue{Kind: iggcon.String, Value: []byte("application/json")}},
		{Key: iggcon.HeaderKey{Kind: iggcon.String, Value: []byte("seq")}, Value: iggcon.HeaderValue{Kind: iggcon.Uint32, Value: []byte{byte(n), byte(n >> 8), 0, 0}}},
	})
}

// produceWith appends per messages to each of parts partitions of topic
// (created if missing), payload(p, n) giving the n-th one of partition p.
func (w *world) produceWith(topic string, parts, per int, payload func(p, n int) []byte) {
	w.t.Helper()
	w.produce(topic, parts, 0, 0) // creates the topic
	for p := 0; p < parts; p++ {
		for i := 0; i < per; i++ {
			n := len(w.sent(topic)[p])
			w.appendRaw(topic, uint32(p), payload(p, n), sampleHeaders(n))
		}
	}
}

// polled reads partition p of topic from offset 0, in whichever protocol
// the server speaks, for the server timestamps the objects must carry.
func (w *world) polled(topic string, p uint32, n int) []iggyadmin.Message {
	w.t.Helper()
	return iggyadmin.Read(w.t, w.iggy.Addr(), w.user, w.password, w.stream, topic, p, n)
}

// metadataColumns are the columns that are not payload fields.
var metadataColumns = map[string]string{
	"offset": "int64", "timestamp": "timestamp[us, tz=UTC]", "stream": "string", "topic": "string",
	"partition_id": "int64", "headers": "map<string, string>",
}

// variedTypes is the type each field of variedPayload must have in an
// object holding offsets first..last of a partition (the inference and
// promotion rules), and the fields held as JSON text.
func variedTypes(first, last uint64) map[string]string {
	types := map[string]string{
		"n": "int64", "level": "string", "lat": "double", "ok": "bool",
		"ctx": "struct<user: string, ids: list<element: int64>>", "tags": "list<element: string>",
		"score": "int64", "mixed": "int64", "msg": "string",
	}
	var floats, ints, strs bool
	for n := first; n <= last; n++ {
		floats = floats || n%3 == 0
		strs = strs || n%4 == 3
		ints = ints || n%4 != 3
	}
	if floats {
		types["score"] = "double"
	}
	if strs {
		types["mixed"] = "string" // JSON text when integers meet strings
	}
	return types
}

// parquetCheck says what the Parquet objects of a topic must hold.
type parquetCheck struct {
	topic string
	// prefix lists the data objects (error objects live elsewhere).
	prefix string
	// rejected reports the offsets that went to error objects instead.
	rejected func(p uint32, off uint64) bool
	// types gives the expected payload column types of an object (nil:
	// not checked).
	types func(first, last uint64) map[string]string
	// pinned lists the fields of a pinned schema: the others are dropped,
	// or kept in payload_extra.
	pinned []string
}

// checkParquet reads every data object back with pyarrow and DuckDB (one
// process) and checks: the objects cover every offset once, in order; both
// readers read every row, with every value equal to its message's
// (metadata, server timestamp, headers, each payload field) and the
// columns of the expected types, none that Athena cannot read.
func (w *world) checkParquet(s *app.Sink, pc parquetCheck) []object {
	w.t.Helper()
	objs := w.objects(s, pc.prefix)
	parts := w.sent(pc.topic)
	bodies := map[string][]byte{}
	next := make([]uint64, len(parts))
	for _, o := range objs {
		if o.first != next[o.partition] || !strings.HasSuffix(o.key, ".parquet") {
			w.t.Fatalf("%s: starts at %d, want %d (gap or overlap), or is not Parquet", o.key, o.first, next[o.partition])
		}
		next[o.partition] = o.last + 1
		bodies[o.key] = o.body
	}
	for p := range parts {
		if next[p] != uint64(len(parts[p])) {
			w.t.Fatalf("partition %d: objects cover %d messages, produced %d", p, next[p], len(parts[p]))
		}
	}
	msgs := make([][]iggyadmin.Message, len(parts))
	for p := range parts {
		msgs[p] = w.polled(pc.topic, uint32(p), len(parts[p]))
	}
	read := parquetread.ReadBytes(w.t, bodies)
	for _, o := range objs {
		for reader, side := range read[o.key].Sides() {
			if err := w.checkParquetSide(pc, o, side, parts[o.partition], msgs[o.partition]); err != nil {
				w.t.Fatalf("%s read by %s: %v", o.key, reader, err)
			}
		}
		if probs := parquetread.AthenaProblems(read[o.key].PyArrow); len(probs) > 0 {
			w.t.Fatalf("%s: types Athena cannot read: %v", o.key, probs)
		}
	}
	return objs
}

func (w *world) checkParquetSide(pc parquetCheck, o object, side parquetread.Side, sent []sent, msgs []iggyadmin.Message) error {
	if side.Error != "" {
		return fmt.Errorf("cannot read it: %s", side.Error)
	}
	var types map[string]string
	if pc.types != nil {
		types = pc.types(o.first, o.last)
	}
	jsonText := jsonTextColumns(side, sent[o.first:o.last+1])
	for _, c := range side.Columns {
		want, ok := metadataColumns[c[0]]
		if !ok && types != nil {
			want = types[c[0]]
		}
		if want != "" && c[1] != want {
			return fmt.Errorf("column %s is %s, want %s", c[0], c[1], want)
		}
		if !ok && types != nil && want == "" {
			return fmt.Errorf("unexpected column %s (%s)", c[0], c[1])
		}
	}
	row := 0
	for off := o.first; off <= o.last; off++ {
		if pc.rejected != nil && pc.rejected(o.partition, off) {
			continue
		}
		if row >= len(side.Rows) {
			return fmt.Errorf("%d rows, but offset %d is not rejected", len(side.Rows), off)
		}
		if err := w.checkRow(side.Row(row), o.partition, pc, sent[off], msgs[off], jsonText); err != nil {
			return fmt.Errorf("row %d (offset %d): %w", row, off, err)
		}
		row++
	}
	if row != len(side.Rows) {
		return fmt.Errorf("%d rows, want %d", len(side.Rows), row)
	}
	return nil
}

// jsonTextColumns finds the columns that hold JSON text: STRING columns
// whose source values are not all strings (a type conflict).
func jsonTextColumns(side parquetread.Side, ss []sent) map[string]bool {
	out := map[string]bool{}
	for _, c := range side.Columns {
		if _, meta := metadataColumns[c[0]]; meta || c[1] != "string" {
			continue
		}
		for _, s := range ss {
			var m map[string]any
			if json.Unmarshal(s.payload, &m) != nil {
				continue
			}
			if v, ok := m[c[0]]; ok && v != nil {
				if _, str := v.(string); !str {
					out[c[0]] = true
				}
			}
		}
	}
	return out
}

// checkRow compares one row with the message it came from.
func (w *world) checkRow(r map[string]any, p uint32, pc parquetCheck, s sent, m iggyadmin.Message, jsonText map[string]bool) error {
	topic := pc.topic
	meta := map[string]any{
		"offset": json.Number(fmt.Sprint(m.Offset)), "stream": w.stream, "topic": topic, "partition_id": json.Number(fmt.Sprint(p)),
		"timestamp": map[string]any{"$ts": json.Number(fmt.Sprint(m.Timestamp))},
	}
	for k, v := range meta {
		if fmt.Sprint(r[k]) != fmt.Sprint(v) {
			return fmt.Errorf("%s = %v, want %v", k, r[k], v)
		}
	}
	var hp batch.HeaderPairs
	pairs, err := hp.Decode(s.headers)
	if err != nil {
		return err
	}
	var wantHeaders []any
	for _, h := range pairs {
		wantHeaders = append(wantHeaders, []any{string(h.Key), string(h.Value)})
	}
	if fmt.Sprint(r["headers"]) != fmt.Sprint(wantHeaders) {
		return fmt.Errorf("headers %v, want %v", r["headers"], wantHeaders)
	}
	payload := map[string]any{}
	for k, v := range r {
		if _, ok := metadataColumns[k]; ok || v == nil {
			continue
		}
		if str, ok := v.(string); ok && (jsonText[k] || k == "payload_extra") {
			if v, err = parquetread.DecodeJSON([]byte(str)); err != nil {
				return fmt.Errorf("%s: JSON text %q: %w", k, str, err)
			}
		}
		if extra, ok := v.(map[string]any); ok && k == "payload_extra" {
			for ek, ev := range extra {
				payload[ek] = ev
			}
			continue
		}
		payload[k] = v
	}
	want, err := parquetread.DecodeJSON(s.payload)
	if err != nil {
		return err
	}
	if wm, ok := want.(map[string]any); ok && pc.pinned != nil {
		if _, kept := r["payload_extra"]; !kept {
			for k := range wm {
				if !slices.Contains(pc.pinned, k) {
					delete(wm, k) // dropped: the schema does not name it
				}
			}
		}
	}
	if err := parquetread.Same(want, payload); err != nil {
		return fmt.Errorf("payload %s: %w", s.payload, err)
	}
	return nil
}

// TestParquetEndToEnd drains 4 partitions of varied JSON logs with
// headers as Parquet (inferred schema, zstd) and reads every object back
// with pyarrow and DuckDB: every value of every message, with its type.
func TestParquetEndToEnd(t *testing.T) {
	parquetread.Available(t)
	eachBackend(t, func(t *testing.T, w *world) {
		topic := "e2e-parquet"
		w.produceWith(topic, 4, 600, variedPayload)
		set := w.settings("b-parquet", topic)
		set["SINK_OUTPUT_FORMAT"] = "parquet"
		set["SINK_MAX_FILE_SIZE"] = "64KiB"
		s := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(s, topic, 10)
		objs := w.checkParquet(s, parquetCheck{topic: topic, prefix: "archive/", types: variedTypes})
		if len(objs) < 8 {
			t.Fatalf("%d objects; 64 KiB rotation over ~160 KiB per partition should give several per partition", len(objs))
		}
		for _, o := range objs {
			if input := inputBytes(w.sent(topic)[o.partition][o.first : o.last+1]); input > 64<<10 {
				t.Fatalf("%s: %d bytes of input, over max_file_size 64KiB", o.key, input)
			}
		}
		w.auditClean(s)
	})
}

func inputBytes(ss []sent) int {
	n := 0
	for _, s := range ss {
		n += len(s.payload) + len(s.headers)
	}
	return n
}

// TestParquetSameBytesEveryPath: for every codec, the object built in
// memory, the same object rendered again by the recovery of a run that
// died right after uploading it, and the object streamed from a second
// read of the range as a multipart upload (over part_size) are the same
// bytes: create-only writes meet no conflict. Every codec runs in process;
// the external stores see the default one (the bytes do not depend on the
// store, the create-only comparisons do).
func TestParquetSameBytesEveryPath(t *testing.T) {
	parquetread.Available(t)
	eachBackend(t, func(t *testing.T, w *world) {
		topic := "pq-paths"
		// Random-looking text keeps even zstd files over one 5 MiB part.
		w.produceWith(topic, 1, 9000, func(p, n int) []byte {
			pad := make([]byte, 700)
			x := uint32(n*2654435761 + 1)
			for i := range pad {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				pad[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[x%62]
			}
			return fmt.Appendf(nil, `{"n":%d,"level":"INFO","lat":%d.5,"pad":"%s"}`, n, n%100, pad)
		})
		codecs := []string{"zstd", "snappy", "gzip", "none"}
		if w.backend != "inproc" {
			codecs = codecs[:1]
		}
		for _, codec := range codecs {
			t.Run(codec, func(t *testing.T) {
				t.Parallel()
				w := w.with(t)
				bodies := map[string]map[string][]byte{}
				for _, path := range []string{"memory", "recovery", "multipart"} {
					set := w.settings("pq-"+codec+"-"+path, topic)
					set["SINK_OUTPUT_FORMAT"] = "parquet"
					set["SINK_PARQUET_COMPRESSION"] = codec
					set["SINK_PARQUET_ROW_GROUP_SIZE"] = "2MiB" // several row groups, flushed as they fill
					set["SINK_MAX_FILE_SIZE"] = "64MiB"
					set["SINK_MULTIPART_THRESHOLD"] = "64MiB"
					set["SINK_PART_SIZE"] = "5MiB"
					cfg := w.config(set)
					var opts app.Options
					switch path {
					case "recovery":
						crashing := w.sink(cfg, app.Options{Hooks: crashAt(func(s drain.Step, _ batch.Partition) error {
							if s == drain.StepUploaded {
								return fmt.Errorf("injected")
							}
							return nil
						})})
						if _, err := crashing.Run(context.Background()); !errors.Is(err, drain.ErrCrash) {
							t.Fatalf("crashing run: %v", err)
						}
						time.Sleep(modelLease + 100*time.Millisecond) // its lease lapses
					case "multipart":
						opts.KeepLimit = 1 << 10
					}
					s := w.sink(cfg, opts)
					sum, err := s.Run(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					p := sum.Partitions[0]
					if p.Conflicts != 0 || (path == "recovery") != p.Recovered || (path != "recovery" && p.Objects != 1) {
						t.Fatalf("%s: %+v", path, p)
					}
					objs := w.objects(s, "archive/")
					if len(objs) != 1 || objs[0].last != 8999 || (path == "multipart" && objs[0].stored <= 5<<20) {
						t.Fatalf("%s: %d objects (%v)", path, len(objs), objs)
					}
					bodies[path] = map[string][]byte{objs[0].key: objs[0].body}
					w.auditClean(s)
				}
				for _, path := range []string{"recovery", "multipart"} {
					for k, b := range bodies["memory"] {
						if !bytes.Equal(bodies[path][k], b) {
							t.Fatalf("%s: the %s render (%d bytes) differs from the in-memory one (%d bytes)", k, path, len(bodies[path][k]), len(b))
						}
					}
				}
				for k, f := range parquetread.ReadBytes(t, bodies["memory"]) {
					for reader, side := range f.Sides() {
						if side.Error != "" || len(side.Rows) != 9000 || (reader == "pyarrow" && side.RowGroups < 3) {
							t.Fatalf("%s by %s: %s, %d rows, %d row groups", k, reader, side.Error, len(side.Rows), side.RowGroups)
						}
					}
				}
			})
		}
	})
}

// errorCase is one configuration under which records go to error objects.
type errorCase struct {
	name, format string
	set          map[string]string
	keep         int64
	// bad reports whether the n-th message of a partition is rejected.
	bad func(n int) bool
}

// errorPayload makes every seventh payload not JSON (every 21st not even
// UTF-8) and every fifth one's "n" a string.
func errorPayload(p, n int) []byte {
	switch {
	case n%21 == 20:
		return []byte{'{', 0xff, 0xfe, '}'}
	case n%7 == 6:
		return fmt.Appendf(nil, `{"n":%d,"cut`, n)
	case n%5 == 4:
		return fmt.Appendf(nil, `{"n":"%d","level":"WARN"}`, n)
	}
	return fmt.Appendf(nil, `{"n":%d,"level":"INFO","extra":{"p":%d}}`, n, p)
}

const errorSchema = `{"fields":[{"name":"n","type":"int64","required":true},{"name":"level","type":"string"}]}`

// TestErrorObjects: records that are not JSON (every format) or do not fit
// a pinned Parquet schema go, exactly once and in offset order, to error
// objects named like their data objects under the error prefix; the data
// objects cover their full ranges; runs count them (summary and EMF); the
// audit reports them and stays clean. Runs that die right after an upload
// and in the middle of one change nothing, in memory and streamed.
func TestErrorObjects(t *testing.T) {
	parquetread.Available(t)
	notJSON := func(n int) bool { return n%7 == 6 || n%21 == 20 }
	cases := []errorCase{
		{name: "json-lines", format: "json_lines", bad: notJSON},
		{name: "parquet", format: "parquet", bad: notJSON},
		{name: "parquet-pinned", format: "parquet", set: map[string]string{"SINK_PARQUET_SCHEMA": errorSchema, "SINK_PARQUET_KEEP_EXTRA": "true"},
			bad: func(n int) bool { return notJSON(n) || n%5 == 4 }},
		{name: "parquet-pinned-streamed", format: "parquet", set: map[string]string{"SINK_PARQUET_SCHEMA": errorSchema}, keep: 2 << 10,
			bad: func(n int) bool { return notJSON(n) || n%5 == 4 }},
		{name: "json-array-streamed", format: "json_array", keep: 1 << 10, bad: notJSON},
	}
	eachBackend(t, func(t *testing.T, w *world) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				w := w.with(t)
				topic := "errs-" + tc.name
				w.produceWith(topic, 2, 150, errorPayload)
				for _, crash := range []bool{false, true} {
					bucket := "errs-" + tc.name
					if crash {
						bucket += "-crash"
					}
					cfg := w.errorConfig(bucket, topic, tc, "error_object")
					if crash {
						w.crashAtEach(cfg, tc.keep, drain.StepUploaded, drain.StepMidUpload)
					}
					var emf bytes.Buffer
					s := w.sink(cfg, app.Options{KeepLimit: tc.keep, Hooks: []drain.Hook{&metrics.EMF{W: &emf, Function: "test"}}})
					w.drainUntilQuiet(s, topic, 20)
					w.checkErrorObjects(s, topic, tc)
					reports := w.auditClean(s)
					n := 0
					for _, r := range reports {
						n += r.ErrorObjects
					}
					if n == 0 {
						t.Fatalf("the audit reports no error objects: %+v", reports)
					}
					if !crash {
						if got, want := emfInvalidPayloads(t, emf.Bytes()), countBad(w.sent(topic), tc.bad); got != want {
							t.Fatalf("EMF InvalidPayloads %d, want %d", got, want)
						}
					}
				}
			})
		}
	})
}

// errorConfig is the configuration of tc's runs: its format, the given
// invalid_payload policy, objects of 40 messages, then tc.set.
func (w *world) errorConfig(bucket, topic string, tc errorCase, invalidPayload string) *config.Config {
	set := w.settings(bucket, topic)
	set["SINK_OUTPUT_FORMAT"] = tc.format
	set["SINK_INVALID_PAYLOAD"] = invalidPayload
	set["SINK_FILE_ROTATION"] = "messages"
	set["SINK_MAX_MESSAGES_PER_FILE"] = "40"
	for k, v := range tc.set {
		set[k] = v
	}
	return w.config(set)
}

// crashAtEach runs, for each step in turn, a sink that dies the first time
// a partition reaches it, and waits for the dead run's leases to lapse.
func (w *world) crashAtEach(cfg *config.Config, keep int64, steps ...drain.Step) {
	w.t.Helper()
	for _, step := range steps {
		var fired atomic.Bool
		crashing := w.sink(cfg, app.Options{KeepLimit: keep, Hooks: crashAt(func(s drain.Step, _ batch.Partition) error {
			if s == step && fired.CompareAndSwap(false, true) {
				return fmt.Errorf("injected")
			}
			return nil
		})})
		if _, err := crashing.Run(context.Background()); !errors.Is(err, drain.ErrCrash) {
			w.t.Fatalf("crash at %s: %v", step, err)
		}
		time.Sleep(modelLease + 100*time.Millisecond) // the dead run's leases lapse
	}
}

func countBad(parts [][]sent, bad func(int) bool) uint64 {
	var n uint64
	for p := range parts {
		for i := range parts[p] {
			if bad(i) {
				n++
			}
		}
	}
	return n
}

// checkErrorObjects lists the data and error objects: every rejected
// offset is in exactly one error line, in the error object named like the
// data object covering it, in offset order, with its reason and payload;
// and the data objects hold every other message.
func (w *world) checkErrorObjects(s *app.Sink, topic string, tc errorCase) {
	w.t.Helper()
	parts := w.sent(topic)
	data := w.objects(s, "archive/"+w.stream+"/")
	ranges := map[string]object{}
	for _, o := range data {
		k := strings.Replace(o.key, "archive/", "archive/_errors/", 1)
		ranges[k[:strings.LastIndexByte(k, '.')]] = o
	}
	seen := make([]map[uint64]bool, len(parts))
	for p := range seen {
		seen[p] = map[uint64]bool{}
	}
	ctx := context.Background()
	err := s.Objects.List(ctx, "archive/_errors/", func(key string, _ int64) error {
		o, ok := ranges[strings.TrimSuffix(key, ".errors.jsonl")]
		if !ok {
			return fmt.Errorf("error object %s has no data object of its range", key)
		}
		body, err := s.Objects.Get(ctx, key)
		if err != nil {
			return err
		}
		prev := int64(-1)
		for _, line := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
			var l struct {
				Offset        uint64
				Timestamp     string
				Stream, Topic string
				PartitionID   uint32 `json:"partition_id"`
				Reason        string
				Headers       map[string]any
				Payload       *string
				PayloadBase64 []byte `json:"payload_base64"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				return fmt.Errorf("%s: %q: %w", key, line, err)
			}
			if l.Offset < o.first || l.Offset > o.last || int64(l.Offset) <= prev || l.PartitionID != o.partition || l.Stream != w.stream || l.Topic != topic {
				return fmt.Errorf("%s: line for offset %d partition %d out of place", key, l.Offset, l.PartitionID)
			}
			prev = int64(l.Offset)
			n := int(l.Offset)
			if !tc.bad(n) || seen[o.partition][l.Offset] {
				return fmt.Errorf("%s: offset %d should not be here (or is twice)", key, l.Offset)
			}
			seen[o.partition][l.Offset] = true
			payload := l.PayloadBase64
			if l.Payload != nil {
				payload = []byte(*l.Payload)
			}
			want := parts[o.partition][l.Offset].payload
			if notJSON := n%7 == 6 || n%21 == 20; notJSON {
				if !strings.Contains(l.Reason, "not valid JSON") || !bytes.Equal(payload, want) {
					return fmt.Errorf("%s offset %d: reason %q payload %q, want the payload as sent %q", key, l.Offset, l.Reason, payload, want)
				}
			} else if !strings.Contains(l.Reason, `field "n": want int64, got string`) || !bytes.Equal(payload, want) {
				return fmt.Errorf("%s offset %d: reason %q payload %q", key, l.Offset, l.Reason, payload)
			}
			if _, err := time.Parse(time.RFC3339Nano, l.Timestamp); err != nil || l.Headers["content-type"] != "application/json" {
				return fmt.Errorf("%s offset %d: timestamp %q headers %v", key, l.Offset, l.Timestamp, l.Headers)
			}
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	for p := range parts {
		for n := range parts[p] {
			if tc.bad(n) != seen[p][uint64(n)] {
				w.t.Fatalf("partition %d offset %d: rejected %v, in an error object %v", p, n, tc.bad(n), seen[p][uint64(n)])
			}
		}
	}
	rejected := func(p uint32, off uint64) bool { return tc.bad(int(off)) }
	if tc.format == "parquet" {
		pc := parquetCheck{topic: topic, prefix: "archive/" + w.stream + "/", rejected: rejected}
		if tc.set["SINK_PARQUET_SCHEMA"] != "" {
			pc.pinned = []string{"n", "level"}
		}
		w.checkParquet(s, pc)
		return
	}
	for _, o := range data {
		recs := decode(w.t, tc.format, o)
		i := 0
		for off := o.first; off <= o.last; off++ {
			if rejected(o.partition, off) {
				continue
			}
			if i >= len(recs) || recs[i].Offset != off || !bytes.Equal(recs[i].Payload, parts[o.partition][off].payload) {
				w.t.Fatalf("%s: record %d is not offset %d", o.key, i, off)
			}
			i++
		}
		if i != len(recs) {
			w.t.Fatalf("%s: %d records, want %d", o.key, len(recs), i)
		}
	}
}

// emfInvalidPayloads sums the run-level InvalidPayloads of EMF lines.
func emfInvalidPayloads(t *testing.T, out []byte) uint64 {
	t.Helper()
	var total uint64
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		if _, perPartition := m["Stream"]; perPartition {
			continue
		}
		v, _ := m["InvalidPayloads"].(float64)
		total += uint64(v)
	}
	return total
}

// producedTypes are the column types of the payloads w.produce sends.
func producedTypes(first, last uint64) map[string]string {
	return map[string]string{"partition": "int64", "n": "int64", "level": "string", "msg": "string", "path": "string", "pad": "string"}
}

// readParquet reads the model's Parquet objects back with pyarrow and
// DuckDB (one process) into their spans' records; without the readers
// (never in CI) the spans are left unchecked, their ranges still counted.
func (m *model) readParquet(cov map[genPart][]span, bodies map[string][]byte) {
	if len(bodies) == 0 {
		return
	}
	if !parquetread.Available(m.t) {
		m.t.Logf("seed %d: %d Parquet objects not read back: the readers are not installed (make parquet-readers)", m.seed, len(bodies))
		for gp, spans := range cov {
			for i := range spans {
				cov[gp][i].unchecked = spans[i].parquet
			}
		}
		return
	}
	read := parquetread.ReadBytes(m.t, bodies)
	for gp, spans := range cov {
		for i, sp := range spans {
			if !sp.parquet {
				continue
			}
			f := read[sp.key]
			var recs [2][]modelRecord
			for j, side := range []parquetread.Side{f.PyArrow, f.DuckDB} {
				if side.Error != "" {
					m.t.Fatalf("seed %d: %s: %s", m.seed, sp.key, side.Error)
				}
				for r := range side.Rows {
					row := side.Row(r)
					off, err := row["offset"].(json.Number).Int64()
					if err != nil {
						m.t.Fatalf("seed %d: %s row %d: offset %v", m.seed, sp.key, r, row["offset"])
					}
					recs[j] = append(recs[j], modelRecord{offset: uint64(off), row: row})
				}
			}
			cov[gp][i].records, cov[gp][i].duck = recs[0], recs[1]
		}
	}
}

// sameRow compares a Parquet row's payload fields with the payload sent.
func sameRow(row map[string]any, payload []byte) error {
	got := map[string]any{}
	for k, v := range row {
		if _, meta := metadataColumns[k]; !meta && v != nil {
			got[k] = v
		}
	}
	want, err := parquetread.DecodeJSON(payload)
	if err != nil {
		return err
	}
	return parquetread.Same(want, got)
}

// TestInvalidPayloadsCountedAfterRecovery: a run that dies after recording
// its first intent reports nothing; the run that recovers the object
// renders it again and counts its invalid payloads, so the runs that report
// count every invalid payload once (base64 and error objects, in memory
// and streamed).
func TestInvalidPayloadsCountedAfterRecovery(t *testing.T) {
	notJSON := func(n int) bool { return n%7 == 6 || n%21 == 20 }
	cases := []errorCase{
		{name: "base64", format: "json_lines", set: map[string]string{"SINK_INVALID_PAYLOAD": "base64"}, bad: notJSON},
		{name: "error-object", format: "json_lines", bad: notJSON},
		{name: "parquet-pinned-streamed", format: "parquet", keep: 2 << 10, bad: func(n int) bool { return notJSON(n) || n%5 == 4 },
			set: map[string]string{"SINK_PARQUET_SCHEMA": errorSchema}},
	}
	eachBackend(t, func(t *testing.T, w *world) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				w := w.with(t)
				topic := "recount-" + tc.name
				w.produceWith(topic, 1, 150, errorPayload)
				cfg := w.errorConfig(topic, topic, tc, "error_object")
				w.crashAtEach(cfg, tc.keep, drain.StepIntent)
				var emf bytes.Buffer
				s := w.sink(cfg, app.Options{KeepLimit: tc.keep, Hooks: []drain.Hook{&metrics.EMF{W: &emf, Function: "test"}}})
				w.drainUntilQuiet(s, topic, 20)
				if got, want := emfInvalidPayloads(t, emf.Bytes()), countBad(w.sent(topic), tc.bad); got != want {
					t.Fatalf("EMF InvalidPayloads %d over the runs after the crash, want %d", got, want)
				}
			})
		}
	})
}
