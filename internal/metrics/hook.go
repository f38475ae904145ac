package metrics

import (
	"io"
	"log/slog"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
)

// DefaultNamespace is the CloudWatch namespace when none is configured.
const DefaultNamespace = "IggyS3Sink"

// EMF writes each run's metrics as CloudWatch embedded-metric-format lines
// (one per partition, one for the run): a drain.RunHook for the Lambda,
// whose stdout CloudWatch reads, and for the poller with -metrics.
type EMF struct {
	W         io.Writer
	Namespace string // "" = DefaultNamespace
	Function  string // the Function dimension
	Logger    *slog.Logger
}

// OnRunEnd implements drain.RunHook.
func (e *EMF) OnRunEnd(sum *drain.Summary, err error) {
	run := Run{Function: e.Function, Failed: err != nil}
	if sum != nil {
		run.Duration = time.Duration(sum.DurationMS) * time.Millisecond
		for _, p := range sum.Partitions {
			if p.Held {
				continue // the member or run that holds it reports its lag
			}
			run.Partitions = append(run.Partitions, Partition{
				Stream: p.Stream, Topic: p.Topic, Partition: p.Partition,
				Objects: p.Objects, Messages: p.Messages, Bytes: p.Bytes, Lag: p.Lag,
				GapMessages: p.GapMessages(), InvalidPayloads: p.InvalidPayloads, MalformedHeaders: p.MalformedHeaders,
				Retries: p.Retries,
			})
		}
	}
	e.Write(run)
}

// Write writes one run's lines; a write error is logged, never returned:
// metrics must not fail a run.
func (e *EMF) Write(run Run) {
	ns := e.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	if err := WriteEMF(e.W, ns, time.Now(), run); err != nil && e.Logger != nil {
		e.Logger.Warn("writing metrics failed", "error", err.Error())
	}
}

// WriteFanOut writes a tick's fan-out line (Function: e.Function unless
// set); errors are logged, as in Write.
func (e *EMF) WriteFanOut(f FanOut) {
	if f.Function == "" {
		f.Function = e.Function
	}
	e.report(WriteFanOut(e.W, e.namespace(), time.Now(), f))
}

// WriteAudit writes an audit's line (Function: e.Function unless set);
// errors are logged, as in Write.
func (e *EMF) WriteAudit(a Audit) {
	if a.Function == "" {
		a.Function = e.Function
	}
	e.report(WriteAudit(e.W, e.namespace(), time.Now(), a))
}

func (e *EMF) namespace() string {
	if e.Namespace == "" {
		return DefaultNamespace
	}
	return e.Namespace
}

func (e *EMF) report(err error) {
	if err != nil && e.Logger != nil {
		e.Logger.Warn("writing metrics failed", "error", err.Error())
	}
}

// WriteTables writes a run's Iceberg registration line (Function:
// e.Function unless set); errors are logged, as in Write.
func (e *EMF) WriteTables(t Tables) {
	if t.Function == "" {
		t.Function = e.Function
	}
	e.report(WriteTables(e.W, e.namespace(), time.Now(), t))
}
