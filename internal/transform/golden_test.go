package transform

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// goldenMessage is one line of testdata/*.input.jsonl: a message as the
// batch encoder hands it over.
type goldenMessage struct {
	Stream    string          `json:"stream"`
	Topic     string          `json:"topic"`
	Partition uint32          `json:"partition"`
	Offset    uint64          `json:"offset"`
	Timestamp uint64          `json:"timestamp"` // server time, µs
	Payload   json.RawMessage `json:"payload"`
}

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	return lines
}

// TestUpstreamConfigGolden loads an unchanged upstream-style connector file
// with all five JSON transforms and checks every record against the golden
// file. The golden UUIDs were computed independently (Python hashlib) from
// the seed rule in the package doc.
func TestUpstreamConfigGolden(t *testing.T) {
	cfg, err := os.ReadFile("testdata/upstream_transforms.toml")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := SpecsFromTOML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range specs {
		order = append(order, s.Type)
	}
	if want := "unwrap_envelope,delete_fields,filter_fields,update_fields,add_fields,proto_convert"; strings.Join(order, ",") != want {
		t.Fatalf("spec order = %v, want %s", order, want)
	}
	p, err := NewPipeline(specs)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 5 {
		t.Fatalf("Len() = %d, want 5 (disabled proto_convert skipped)", p.Len())
	}
	inputs := readLines(t, "testdata/upstream_transforms.input.jsonl")
	want := readLines(t, "testdata/upstream_transforms.golden.jsonl")
	if len(inputs) != len(want) {
		t.Fatalf("%d inputs but %d golden lines", len(inputs), len(want))
	}
	for i, line := range inputs {
		var m goldenMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("input line %d: %v", i+1, err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Payload); err != nil {
			t.Fatalf("input line %d: %v", i+1, err)
		}
		got, err := p.Transform(nil, compact.Bytes(), m.Stream, m.Topic, m.Partition, m.Offset, m.Timestamp)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Errorf("line %d:\ngot  %s\nwant %s", i+1, got, want[i])
		}
	}
}
