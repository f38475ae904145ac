package drain_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// stopInSetupConn ends the run's context inside one setup call and fails
// that call with the context's cause, as a connection does when a signal
// cuts a request off.
type stopInSetupConn struct {
	drain.Conn
	at     string // "topic" or "join"
	topic  string // the topic whose call is cut off
	cancel context.CancelFunc
}

func (c *stopInSetupConn) Topic(ctx context.Context, stream, topic, group string) (*source.Topic, error) {
	if c.at == "topic" && topic == c.topic {
		c.cancel()
		return nil, fmt.Errorf("iggy get topic: not sent: %w", context.Cause(ctx))
	}
	return c.Conn.Topic(ctx, stream, topic, group)
}

func (c *stopInSetupConn) Join(ctx context.Context, t *source.Topic) error {
	if c.at == "join" && t.Topic == c.topic {
		c.cancel()
		return fmt.Errorf("iggy join group: not sent: %w", context.Cause(ctx))
	}
	return c.Conn.Join(ctx, t)
}

// A signal during a run's setup (dialing, resolving a topic, joining its
// group) is a stop, not a failure: the run says it stopped on the signal,
// leaves the groups it joined, and the next run archives everything once.
// CI once saw `poller run` report "run failed" for a SIGTERM that came
// during its first Iggy call.
func TestStopDuringSetup(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		for _, at := range []string{"dial", "topic", "join"} {
			func() {
				first, second := uniqueName("setup-a"), uniqueName("setup-b")
				w.produce(first, 2, 30, 100)
				w.produce(second, 2, 30, 100)
				set := w.settings("setup-"+at, first)
				set["SINK_TOPICS"] = first + "," + second
				s := w.sink(w.config(set), app.Options{})

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				r := s.Runner()
				dial := r.Dial
				r.Dial = func(dctx context.Context) (drain.Conn, error) {
					if at == "dial" {
						cancel()
					}
					c, err := dial(dctx)
					if err != nil {
						return nil, err
					}
					return &stopInSetupConn{Conn: c, at: at, topic: second, cancel: cancel}, nil
				}
				sum, err := r.Run(ctx)
				if err != nil {
					t.Fatalf("a signal during %s: run error %v, want a stop", at, err)
				}
				if sum.Stopped != "signal" || sum.Failed != 0 {
					t.Fatalf("a signal during %s: stopped %q with %d failed partitions, want stopped on the signal and none failed", at, sum.Stopped, sum.Failed)
				}
				if sum.GroupsLeft != sum.Groups || sum.LeasesReleased != sum.Leases {
					t.Fatalf("a signal during %s: left %d of %d groups, released %d of %d leases", at, sum.GroupsLeft, sum.Groups, sum.LeasesReleased, sum.Leases)
				}
				if at == "join" && sum.Groups != 1 {
					t.Fatalf("a signal while joining the second topic's group: %d groups joined, want the first's", sum.Groups)
				}
				w.drainUntilQuiet(s, first, 10)
				w.drainUntilQuiet(s, second, 10)
				all := w.objects(s, "archive/")
				w.checkGeneration(objectsOf(all, first), 0, w.sent(first), first, "json_lines")
				w.checkGeneration(objectsOf(all, second), 0, w.sent(second), second, "json_lines")
			}()
		}
	})
}
