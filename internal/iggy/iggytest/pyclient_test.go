package iggytest_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/iggytest"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/iggy/vsr"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

// pyIggy is the python of the apache-iggy 0.9.0 venv (testenv.PyIggy).
func pyIggy(t *testing.T) string { return testenv.PyIggy(t) }

// TestPythonClient drives the broker's 0.9 protocol with the released Python
// client (apache-iggy 0.9.0, Rust SDK 0.11.0 inside): create stream and topic
// (with the durability options it always sends), send with user headers to
// explicit partitions, create and join a group, poll each partition with the
// group (Offset strategy), store and read the group's offsets.
func TestPythonClient(t *testing.T) {
	py := pyIggy(t)
	b := startBroker(t, iggytest.WithProtocol("0.9"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "pyclient_conformance.py"), b.Addr())
	type msg struct {
		Offset    uint64         `json:"offset"`
		Partition uint32         `json:"partition"`
		Payload   string         `json:"payload"`
		ID        uint64         `json:"id"`
		Headers   map[string]any `json:"headers"`
	}
	var res struct {
		Topic struct {
			Name            string `json:"name"`
			PartitionsCount int    `json:"partitions_count"`
		} `json:"topic"`
		MissingTopicIsNone bool `json:"missing_topic_is_none"`
		Confirmations      []struct {
			Partition  uint32 `json:"partition"`
			BaseOffset uint64 `json:"base_offset"`
		} `json:"confirmations"`
		Polled map[string][]msg `json:"polled"`
		Stored map[string]struct {
			Partition uint32 `json:"partition"`
			Current   uint64 `json:"current"`
			Stored    uint64 `json:"stored"`
			Raw       string `json:"raw"`
		} `json:"stored"`
		Group struct {
			Name    string `json:"name"`
			Members []struct {
				Partitions []uint32 `json:"partitions"`
			} `json:"members"`
		} `json:"group"`
	}
	testenv.PyJSON(t, cmd, &res)
	if res.Topic.Name != "pyt" || res.Topic.PartitionsCount != 3 || !res.MissingTopicIsNone {
		t.Fatalf("topic %+v, missing topic is None: %v", res.Topic, res.MissingTopicIsNone)
	}
	if len(res.Confirmations) != 3 {
		t.Fatalf("confirmations %+v", res.Confirmations)
	}
	for p := range uint32(3) {
		if c := res.Confirmations[p]; c.Partition != p || c.BaseOffset != 0 {
			t.Fatalf("confirmation %d: %+v", p, c)
		}
		got := res.Polled[fmt.Sprint(p)]
		if len(got) != 3 {
			t.Fatalf("partition %d: polled %+v, want offsets 1..3", p, got)
		}
		for i, m := range got {
			off := uint64(i + 1)
			if m.Offset != off || m.Partition != p || m.Payload != fmt.Sprintf("p%d-m%d", p, off) || m.ID != 1000*uint64(p+1)+off ||
				m.Headers["source"] != "python" || m.Headers["seq"] != float64(off) {
				t.Fatalf("partition %d message %d: %+v", p, i, m)
			}
		}
		st := res.Stored[fmt.Sprint(p)]
		if st.Partition != p || st.Current != 3 || st.Stored != 3-uint64(p) {
			t.Fatalf("partition %d stored offset %+v, want %d", p, st, 3-p)
		}
		if off, ok := b.GroupOffset("pys", "pyt", "pyg", p); !ok || off != 3-uint64(p) {
			t.Fatalf("broker's group offset of partition %d: %d, %v", p, off, ok)
		}
	}
	if res.Group.Name != "pyg" || len(res.Group.Members) != 1 || !slices.Equal(res.Group.Members[0].Partitions, []uint32{0, 1, 2}) {
		t.Fatalf("group %+v", res.Group)
	}
	// The broker saw three accepted stores from one 0.9 client id.
	stores := b.OffsetStores()
	if len(stores) != 3 {
		t.Fatalf("offset stores %+v", stores)
	}
	for _, s := range stores {
		if s.Status != 0 || s.Protocol != "0.9" || s.Client.IsZero() || s.Client != stores[0].Client || s.Group != "pyg" {
			t.Fatalf("offset store %+v", s)
		}
	}
	// The client left the group and logged out; the topic kept the options it sent.
	if members, err := b.GroupMembers("pys", "pyt", "pyg"); err != nil || len(members) != 0 {
		t.Fatalf("members after leave: %+v, %v", members, err)
	}
	c := loginVSR(t, b.Addr(), vsr.V011)
	tp, _ := c.getTopic("pys", "pyt")
	opts, err := vsr.ParseOptions(tp.Options)
	if err != nil || !slices.ContainsFunc(opts, func(o vsr.Option) bool { return o.Key == "durability" }) {
		t.Fatalf("topic options %+v, %v; want the durability the client sent", opts, err)
	}
}
