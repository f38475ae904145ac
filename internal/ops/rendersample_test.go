package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// renderInputs are the producer's messages: JSON objects with and without
// headers, an array, text that is not JSON, unicode and escapes.
var renderInputs = []struct {
	payload string
	headers map[string]any
}{
	{`{"id":1,"user":{"name":"Ada","password":"p1"},"debug_trace":"x","note":null}`, map[string]any{"content-type": "application/json", "attempt": 2}},
	{`{ "id" : 2 , "tags":["a","b"], "price": 12.50 }`, nil},
	{`[1,2,3]`, map[string]any{"retry": true, "ratio": 0.25}},
	{`plain text, not JSON`, map[string]any{"source": "cli"}},
	{`{"id":4,"text":"caf\u00e9 \"quoted\" ✓"}`, nil},
}

const renderTransforms = `
[transforms.delete_fields]
enabled = true
fields = ["password"]

[transforms.filter_fields]
enabled = true
include_matching = false
[[transforms.filter_fields.patterns]]
key_pattern = { starts_with = "debug_" }

[transforms.add_fields]
enabled = true
[[transforms.add_fields.fields]]
key = "event_id"
value.computed = "uuid_v7"
[[transforms.add_fields.fields]]
key = "seen_at"
value.computed = "timestamp_micros"
`

// TestRenderMatchesTheSink runs the sink over messages in a broker into an
// in-process S3, then renders the same messages: the bytes and the key
// must be the sink's, for every format, compression and schema.
func TestRenderMatchesTheSink(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		transforms bool
	}{
		{"json_lines", map[string]string{"SINK_INCLUDE_HEADERS": "true"}, false},
		{"json_lines gzip", map[string]string{"SINK_COMPRESSION": "gzip"}, false},
		{"json_lines zstd, no metadata, transforms", map[string]string{"SINK_COMPRESSION": "zstd", "SINK_INCLUDE_METADATA": "false"}, true},
		{"json_array", map[string]string{"SINK_OUTPUT_FORMAT": "json_array", "SINK_INCLUDE_HEADERS": "true"}, false},
		{"json_array zstd, schema text", map[string]string{"SINK_OUTPUT_FORMAT": "json_array", "SINK_COMPRESSION": "zstd", "SINK_SCHEMA": "text"}, false},
		{"raw", map[string]string{"SINK_OUTPUT_FORMAT": "raw"}, false},
		{"raw gzip, transforms", map[string]string{"SINK_OUTPUT_FORMAT": "raw", "SINK_COMPRESSION": "gzip"}, true},
		{"json_lines, schema raw, Hive path with {timestamp}", map[string]string{"SINK_SCHEMA": "raw",
			"SINK_PATH_TEMPLATE": "{stream}/{topic}/year={year}/month={month}/day={day}/{timestamp}"}, false},
		{"parquet", map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_INCLUDE_HEADERS": "true"}, false},
		{"parquet snappy, transforms", map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_PARQUET_COMPRESSION": "snappy"}, true},
		{"parquet, schema text", map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_SCHEMA": "text"}, false},
		{"parquet, error object", map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_INVALID_PAYLOAD": "error_object", "SINK_INCLUDE_HEADERS": "true"}, true},
		{"json_array, error object", map[string]string{"SINK_OUTPUT_FORMAT": "json_array", "SINK_INVALID_PAYLOAD": "error_object"}, false},
		{"parquet, pinned schema, error object", map[string]string{"SINK_OUTPUT_FORMAT": "parquet", "SINK_INVALID_PAYLOAD": "error_object",
			"SINK_PARQUET_SCHEMA": `{"fields":[{"name":"id","type":"int64","required":true},{"name":"tags","type":{"list":"string"}}]}`}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.transforms {
				file = renderTransforms
			}
			cfg, key, want, addr := sinkObject(t, tc.env, file)
			var out, errs bytes.Buffer
			res, err := Render(cfg, strings.NewReader(envelopes(t, addr)), &out, RenderOptions{Envelope: true, Partition: 1, Errors: &errs})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want[key]) {
				t.Fatalf("render differs from the sink's object %s:\nrender %q\nsink   %q", key, out.Bytes(), want[key])
			}
			if res.Key != key || res.Messages != len(renderInputs) || res.Objects != 1 {
				t.Fatalf("render result %+v, want key %s", res, key)
			}
			if len(want) != 1+min(res.Rejected, 1) || (res.Rejected > 0 && !bytes.Equal(errs.Bytes(), want[res.ErrorsKey])) {
				t.Fatalf("%d records rejected to %s; the sink wrote %d objects; error objects:\nrender %q\nsink   %q", res.Rejected, res.ErrorsKey, len(want), errs.Bytes(), want[res.ErrorsKey])
			}
			if tc.env["SINK_INVALID_PAYLOAD"] == "error_object" && res.Rejected == 0 {
				t.Fatal("no record was rejected")
			}
		})
	}
}

// TestRenderMatchesTheSinkByValue: under a path template with a payload
// field, render writes one value's object of the unit (the first
// message's, or -value's), byte for byte the sink's, under its key, and
// lists the unit's values; a value no message has is refused, naming
// those there are.
func TestRenderMatchesTheSinkByValue(t *testing.T) {
	for _, format := range []string{"json_lines", "parquet"} {
		t.Run(format, func(t *testing.T) {
			env := map[string]string{"SINK_OUTPUT_FORMAT": format, "SINK_PATH_TEMPLATE": "{stream}/{topic}/id={payload.id}/{date}"}
			cfg, _, bodies, addr := sinkObject(t, env, "")
			input := envelopes(t, addr)
			wantValues := []ValueRecords{{"1", 1}, {"2", 1}, {keys.DefaultValueSegment, 2}, {"4", 1}}
			for _, v := range wantValues {
				var out bytes.Buffer
				value := v.Value
				if value == "1" {
					value = "" // the first message's
				}
				res, err := Render(cfg, strings.NewReader(input), &out, RenderOptions{Envelope: true, Partition: 1, Value: value})
				if err != nil {
					t.Fatal(err)
				}
				want, ok := bodies[res.Key]
				if !ok {
					t.Fatalf("render names %s, which the sink did not write (it wrote %d objects)", res.Key, len(bodies))
				}
				if !strings.Contains(res.Key, "/id="+v.Value+"/") || !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("render of %s differs from the sink's object %s", v.Value, res.Key)
				}
				if res.Value != v.Value || res.Messages != v.Records || fmt.Sprint(res.Values) != fmt.Sprint(wantValues) {
					t.Fatalf("render result %+v, want value %s of %d records among %v", res, v.Value, v.Records, wantValues)
				}
			}
			if res, err := Render(cfg, strings.NewReader(input), new(bytes.Buffer), RenderOptions{Envelope: true, Partition: 1}); err != nil || res.Objects != 1 {
				t.Fatalf("render counts %d units (%v), the sink wrote 1", res.Objects, err)
			}
			two := *cfg
			two.Plugin.MaxPartitionValues = 2 // 1, 2 | the default, the default, 4
			if res, err := Render(&two, strings.NewReader(input), new(bytes.Buffer), RenderOptions{Envelope: true, Partition: 1}); err != nil || res.Objects != 2 {
				t.Fatalf("with max_partition_values 2, render counts %d units (%v), want 2", res.Objects, err)
			}
			_, err := Render(cfg, strings.NewReader(input), new(bytes.Buffer), RenderOptions{Envelope: true, Partition: 1, Value: "DE"})
			if err == nil || !strings.Contains(err.Error(), `"DE"`) || !strings.Contains(err.Error(), `"4"`) {
				t.Fatalf("render of a value no message has: %v, want an error naming it and the messages' values", err)
			}
		})
	}
}

// sinkObject appends renderInputs to partition 1 of a broker, runs the sink
// with the environment env (and TOML file) into an in-process S3, and
// returns the configuration, the one data object's key, every object's
// bytes by key (the data object's and its error object's, if any), and the
// broker's address (the broker lives until the test ends).
func sinkObject(t *testing.T, env map[string]string, file string) (*config.Config, string, map[string][]byte, string) {
	t.Helper()
	b, err := iggytest.Start(iggytest.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := b.CreateStream("app"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateTopic("app", "logs", 2); err != nil {
		t.Fatal(err)
	}
	for _, in := range renderInputs {
		raw, _ := json.Marshal(in.headers)
		var hm map[string]json.RawMessage
		_ = json.Unmarshal(raw, &hm)
		h, err := encodeHeaders(hm)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Append("app", "logs", 1, []byte(in.payload), h); err != nil {
			t.Fatal(err)
		}
	}
	backend := s3mem.New()
	if err := backend.CreateBucket("rendered"); err != nil {
		t.Fatal(err)
	}
	s3srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3srv.Close)
	all := map[string]string{
		"IGGY_ADDRESS": b.Addr(), "SINK_STREAM": "app", "SINK_TOPICS": "logs", "SINK_BUCKET": "rendered", "SINK_PREFIX": "p",
		"SINK_REGION": "us-east-1", "SINK_ENDPOINT": s3srv.URL, "SINK_ACCESS_KEY_ID": "k", "SINK_SECRET_ACCESS_KEY": "s",
		"SINK_FILE_ROTATION": "messages", "SINK_MAX_MESSAGES_PER_FILE": fmt.Sprint(len(renderInputs)),
	}
	for k, v := range env {
		all[k] = v
	}
	cfg, err := config.LoadBytes([]byte(file), "transforms.toml", envOf(all))
	if err != nil {
		t.Fatal(err)
	}
	sink, err := app.New(context.Background(), cfg, app.Options{State: state.NewMemory(nil), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sink.Run(context.Background())
	if err != nil || sum.Objects != 1 && !app.Names(cfg).HasValues() {
		t.Fatalf("sink run: %d objects, %v", sum.Objects, err)
	}
	var key string
	bodies := map[string][]byte{}
	_ = sink.Objects.List(context.Background(), "", func(k string, _ int64) error {
		if strings.HasPrefix(k, "p/"+keys.GenerationsFolder+"/") {
			return nil // the partition's generation and name markers
		}
		body, err := sink.Objects.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		bodies[k] = body
		if !strings.HasSuffix(k, ".errors.jsonl") {
			key = k
		}
		return nil
	})
	return cfg, key, bodies, b.Addr()
}

// envelopes reads partition 1 back from the broker and writes it as
// `render -envelope` lines, with the server's timestamps.
func envelopes(t *testing.T, addr string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := source.Open(ctx, source.Config{Address: addr, Username: "iggy", Password: "iggy", ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tp, err := conn.Topic(ctx, "app", "logs", "reader")
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Join(ctx, tp); err != nil {
		t.Fatal(err)
	}
	msgs, _, err := conn.Poll(ctx, tp, 1, 0, 100, nil)
	if err != nil || len(msgs) != len(renderInputs) {
		t.Fatalf("poll: %d messages, %v", len(msgs), err)
	}
	var b strings.Builder
	for i, m := range msgs {
		line := map[string]any{"offset": m.Offset, "timestamp": m.Timestamp, "payload_base64": m.Payload}
		if renderInputs[i].headers != nil {
			line["headers"] = renderInputs[i].headers
		}
		j, _ := json.Marshal(line)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestRenderBareLinesAndRotation(t *testing.T) {
	cfg := loadEnv(t, map[string]string{"SINK_FILE_ROTATION": "messages", "SINK_MAX_MESSAGES_PER_FILE": "2", "SINK_PREFIX": "x"})
	in := "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n"
	var out bytes.Buffer
	at := time.Date(2024, 3, 16, 14, 2, 31, 0, time.UTC)
	res, err := Render(cfg, strings.NewReader(in), &out, RenderOptions{FirstOffset: 40, Time: at})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"offset":40,"timestamp":"2024-03-16T14:02:31Z","stream":"app","topic":"logs","partition_id":0,"payload":{"a":1}}
{"offset":41,"timestamp":"2024-03-16T14:02:31Z","stream":"app","topic":"logs","partition_id":0,"payload":{"a":2}}
{"offset":42,"timestamp":"2024-03-16T14:02:31Z","stream":"app","topic":"logs","partition_id":0,"payload":{"a":3}}
`
	if out.String() != want {
		t.Fatalf("render:\n%s\nwant:\n%s", out.String(), want)
	}
	if res.Objects != 2 || res.Key != "x/app/logs/2024-03-16/14/00000-00000000000000000040-00000000000000000042.jsonl" {
		t.Fatalf("result %+v: want 2 objects under rotation and the key of 40..42", res)
	}
}

func TestRenderRefusesBadInput(t *testing.T) {
	cfg := loadEnv(t, nil)
	for _, tc := range []struct {
		name, in string
		envelope bool
		want     string
	}{
		{"empty input", "", false, "no messages"},
		{"envelope not JSON", "hello\n", true, "line 1: envelope"},
		{"unknown envelope field", `{"payload":1,"partition":3}` + "\n", true, `unknown field "partition"`},
		{"no payload", `{"offset":1}` + "\n", true, "no payload"},
		{"both payloads", `{"payload":1,"payload_base64":"AA=="}` + "\n", true, "not both"},
		{"offsets go back", `{"offset":5,"payload":1}` + "\n" + `{"offset":5,"payload":2}` + "\n", true, "line 2: offset 5 does not follow 5"},
		{"bad timestamp", `{"timestamp":"yesterday","payload":1}` + "\n", true, "RFC 3339"},
		{"header object", `{"headers":{"h":{"x":1}},"payload":1}` + "\n", true, `header "h"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(cfg, strings.NewReader(tc.in), &bytes.Buffer{}, RenderOptions{Envelope: tc.envelope})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
