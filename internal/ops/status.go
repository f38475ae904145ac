package ops

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
)

// PartitionStatus is where the sink stands on one partition, as Iggy sees
// it: the consumer group's committed offset, the partition's newest offset,
// and the messages in between.
type PartitionStatus struct {
	Stream    string  `json:"stream"`
	Topic     string  `json:"topic"`
	Group     string  `json:"consumer_group"`
	Partition uint32  `json:"partition"`
	Messages  uint64  `json:"messages"`
	Current   *uint64 `json:"current_offset,omitempty"` // nil when the partition is empty
	Committed *uint64 `json:"committed_offset,omitempty"`
	Lag       uint64  `json:"lag"`
}

// statusTimeout bounds Status: a stalled server must not hang the command.
const statusTimeout = time.Minute

// Status reads every configured partition's offsets. Like Audit it joins
// no group and writes nothing, so it can run beside live sinks.
func Status(ctx context.Context, s *app.Sink) ([]PartitionStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	conn, err := s.OpenIggy(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []PartitionStatus
	for _, st := range s.Config.Streams {
		for _, name := range st.Topics {
			t, err := conn.Topic(ctx, st.Stream, name, st.ConsumerGroup)
			if err != nil {
				return out, err
			}
			offsets, err := conn.Offsets(ctx, t)
			if err != nil {
				return out, err
			}
			for _, p := range offsets {
				out = append(out, PartitionStatus{Stream: t.Stream, Topic: t.Topic, Group: t.Group, Partition: p.Partition,
					Messages: p.Messages, Current: p.Current, Committed: p.Committed, Lag: p.Lag()})
			}
		}
	}
	return out, nil
}

// WriteStatus prints Status as a table, one partition per line.
func WriteStatus(ctx context.Context, w io.Writer, s *app.Sink) error {
	rows, err := Status(ctx, s)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM/TOPIC\tGROUP\tPARTITION\tCOMMITTED\tCURRENT\tLAG")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s/%s\t%s\t%d\t%s\t%s\t%d\n", r.Stream, r.Topic, r.Group, r.Partition, offsetText(r.Committed), offsetText(r.Current), r.Lag)
	}
	return tw.Flush()
}

func offsetText(p *uint64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
