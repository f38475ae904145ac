package drain_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/iggyadmin"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// TestValuesFromThePythonProducer produces with the released Python client
// (apache-iggy 0.9.0) into a topic of the broker or a real 0.9 server, drains with
// {payload.country} in the path template and checks what a reader checks:
// every message in exactly one object, whose folder names its value, and
// a clean audit.
func TestValuesFromThePythonProducer(t *testing.T) {
	py := testenv.PyIggy(t)
	if p := iggyadmin.BrokerProtocol(t); p != "0.9" {
		t.Skipf("the Python client speaks 0.9; the server speaks %s", p)
	}
	eachBackend(t, func(t *testing.T, w *world) {
		const parts, per = 3, 180
		stream, topic := uniqueName("pyvalues"), "orders"
		if _, err := w.iggy.CreateStream(stream); err != nil {
			t.Fatal(err)
		}
		if _, err := w.iggy.CreateTopic(stream, topic, parts); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "py_produce_countries.py"), w.iggy.Addr(), stream, topic, strconv.Itoa(parts), strconv.Itoa(per))
		cmd.Env = append(os.Environ(), "IGGY_USERNAME="+w.user, "IGGY_PASSWORD="+w.password)
		var produced map[string][]struct {
			Payload string  `json:"payload"`
			Country *string `json:"country"`
		}
		testenv.PyJSON(t, cmd, &produced)
		w.stream = stream
		w.produced[stream+"/"+topic] = make([][]sent, parts)
		want := make([][]string, parts)
		for p := 0; p < parts; p++ {
			msgs := produced[strconv.Itoa(p)]
			if len(msgs) != per {
				t.Fatalf("partition %d: the producer sent %d messages, want %d", p, len(msgs), per)
			}
			for _, m := range msgs {
				w.produced[stream+"/"+topic][p] = append(w.produced[stream+"/"+topic][p], sent{payload: []byte(m.Payload)})
				seg := keys.DefaultValueSegment
				if m.Country != nil {
					seg = string(keys.AppendValueSegment(nil, []byte(*m.Country), keys.DefaultValueSegment))
				}
				want[p] = append(want[p], seg)
			}
		}
		set := valueSettings(w, "pyvalues", topic, "json_lines")
		set["SINK_STREAM"] = stream
		s := w.sink(w.config(set), app.Options{})
		w.drainUntilQuiet(s, topic, 20)
		w.checkValues(s, topic, "json_lines", want)
		w.auditClean(s)
	})
}
