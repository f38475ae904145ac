package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/explain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// AuditOptions are an audit's choices.
// Auditor checks the archive against Iggy's committed offsets and the
// state table, and the tables against the archive.
type Auditor struct {
	Config  *config.Config
	Objects audit.Lister
	State   any // read when it can be
	Names   *keys.Namer
	Open    func(ctx context.Context) (*source.Conn, error) // with the topics resolved as a run does
	Explain *explain.Explainer
	Tables  func(ctx context.Context, reports []audit.Report) ([]audit.TableReport, error)
	Log     *slog.Logger
}

// NewAuditor audits s's archive.
func NewAuditor(s *app.Sink, log *slog.Logger) *Auditor {
	return &Auditor{Config: s.Config, Objects: s.Objects, State: s.State, Names: s.Names(), Open: s.OpenTopics,
		Explain: s.Explainer(), Tables: s.AuditTables, Log: log}
}

// ErrAuditFailed reports an overlap or an unreported gap.
var ErrAuditFailed = errors.New("audit found overlapping objects or unreported gaps")

type AuditOptions struct {
	// Progress, when set, is told how far long listings have come.
	Progress func(audit.Progress)
	// JSON prints WriteAuditWith's report as one JSON document.
	JSON bool
}

// stateReader is the read the audit makes of the state store
// (*state.Dynamo, *state.Memory).
type stateReader interface {
	Get(ctx context.Context, key state.Key) (state.State, bool, error)
}

// AuditWith checks every configured partition's objects against the
// group's committed offset and the state's last written offset. It joins
// no group and writes nothing, so it does not disturb running sinks. A
// state that cannot be read (no table, no permission) is noted and the
// partition is checked against the group alone.
func (s *Auditor) Audit(ctx context.Context, o AuditOptions) ([]audit.Report, error) {
	conn, err := s.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var parts []audit.Partition
	var stateErr error
	for _, st := range s.Config.Streams {
		for _, name := range st.Topics {
			t, err := conn.Topic(ctx, st.Stream, name, st.ConsumerGroup)
			if err != nil {
				return nil, err
			}
			for _, p := range t.Partitions {
				ap := audit.Partition{Stream: t.Stream, Topic: t.Topic, Partition: p.ID}
				off, ok, err := conn.StoredOffset(ctx, t, p.ID)
				if err != nil {
					return nil, err
				}
				if ok {
					ap.Committed = &off
				}
				if stateErr == nil {
					ap.State, stateErr = s.auditState(ctx, state.Key{Group: t.Group, Stream: t.Stream, Topic: t.Topic, Partition: p.ID})
				}
				parts = append(parts, ap)
			}
		}
	}
	reports, err := audit.CheckWith(ctx, s.Objects, s.Names, parts, audit.Options{Progress: o.Progress})
	if err != nil && ctx.Err() == nil {
		// A listing failed: say what to fix, as poller check does.
		err = s.Explain.S3("list", err)
	}
	if stateErr != nil && len(reports) > 0 {
		s.Log.Warn("the audit could not read the state table; partitions are checked against the consumer group only", "error", stateErr.Error())
		reports[0].Notes = append(reports[0].Notes, "state not read, so not checked: "+stateErr.Error())
	}
	return reports, err
}

// auditState reads one partition's state for the audit.
func (s *Auditor) auditState(ctx context.Context, key state.Key) (*audit.State, error) {
	r, ok := s.State.(stateReader)
	if !ok {
		return nil, errors.New("the state store cannot be read")
	}
	st, found, err := r.Get(ctx, key)
	if errors.Is(err, state.ErrTableMissing) {
		return nil, fmt.Errorf("table %q does not exist", s.Config.Plugin.StateTable)
	}
	if err != nil || !found {
		return nil, err
	}
	as := &audit.State{Generation: st.Generation}
	if st.HasWritten {
		w := st.LastWritten
		as.Written = &w
	}
	if st.Intent != nil {
		as.HasIntent, as.IntentFirst, as.IntentLast = true, st.Intent.First, st.Intent.Last
	}
	return as, nil
}

// WriteAuditWith runs AuditWith and prints the report (text, or JSON with
// o.JSON); it returns ErrAuditFailed on any violation.
func (s *Auditor) Write(ctx context.Context, w io.Writer, o AuditOptions) error {
	reports, err := s.Audit(ctx, o)
	if err != nil {
		return err
	}
	tables, err := s.Tables(ctx, reports)
	if err != nil {
		return err
	}
	if o.JSON {
		err = audit.WriteJSONWith(w, reports, tables)
	} else if err = audit.Write(w, reports); err == nil {
		err = audit.WriteTables(w, tables)
	}
	if err != nil {
		return err
	}
	if err := AuditVerdict(reports); err != nil {
		return err
	}
	return TablesVerdict(tables)
}

// TablesVerdict is nil when every table holds the guarantee.
func TablesVerdict(tables []audit.TableReport) error {
	for _, t := range tables {
		if !t.OK() {
			return fmt.Errorf("%w: table %s: %d archived objects missing, %d registered twice, %d outside the archive",
				ErrAuditFailed, t.Table, len(t.Missing), len(t.Twice), len(t.Outside))
		}
	}
	return nil
}

// AuditVerdict is nil when every report holds the guarantee, and otherwise
// ErrAuditFailed with the violations' count and the first few findings.
func AuditVerdict(reports []audit.Report) error {
	v := audit.Summarize(reports)
	if v.OK {
		return nil
	}
	var first []string
	for _, r := range reports {
		for _, f := range append(append([]string{}, r.Overlaps...), r.Gaps...) {
			if len(first) < 3 {
				first = append(first, fmt.Sprintf("%s/%s partition %d: %s", r.Stream, r.Topic, r.Partition, f))
			}
		}
	}
	return fmt.Errorf("%w: %d overlaps and %d unreported gaps: %s", ErrAuditFailed, v.Overlaps, v.Gaps, strings.Join(first, "; "))
}
