package metrics

import (
	"fmt"
	"io"
	"time"
)

// Fan-out and audit metric names; each line has the single dimension
// DimFunction, so that template alarms and dashboard widgets can name them.
const (
	MetricWorkers        = "Workers"
	MetricWorkersStarted = "WorkersStarted"
	MetricSettleTime     = "SettleTime"

	MetricAuditPartitions = "AuditPartitions"
	MetricAuditObjects    = "AuditObjects"
	MetricAuditGapMarkers = "AuditGapMarkers"
	MetricAuditGaps       = "AuditGaps"
	MetricAuditOverlaps   = "AuditOverlaps"

	MetricTableCommits       = "TableCommits"
	MetricTableConflicts     = "TableCommitConflicts"
	MetricTableFiles         = "TableFilesRegistered"
	MetricTableCommitLatency = "TableCommitLatency"
	MetricTableFailures      = "TableRegistrationFailures"
)

// Tables is what one run's Iceberg registration did (table_format =
// "iceberg").
type Tables struct {
	Function string
	// Commits counts the commits the catalog took, Conflicts those it
	// refused because another writer committed first, Files the data files
	// registered; Latency is the time spent committing.
	Commits, Conflicts, Files int
	Latency                   time.Duration
	// Failed: the registration failed (the objects are archived; the next
	// run registers them).
	Failed bool
}

var tableMetrics = []metricDef{
	{MetricTableCommits, "Count"},
	{MetricTableConflicts, "Count"},
	{MetricTableFiles, "Count"},
	{MetricTableCommitLatency, "Milliseconds"},
	{MetricTableFailures, "Count"},
}

// WriteTables writes a run's table line (dimension Function).
func WriteTables(w io.Writer, namespace string, now time.Time, t Tables) error {
	if t.Commits < 0 || t.Conflicts < 0 || t.Files < 0 || t.Latency < 0 {
		return fmt.Errorf("%w: negative table figures %+v", ErrInvalid, t)
	}
	failed := uint64(0)
	if t.Failed {
		failed = 1
	}
	return writeFunctionLine(w, namespace, now, t.Function, tableMetrics, func(b []byte) []byte {
		b = appendUintProp(b, MetricTableCommits, uint64(t.Commits))
		b = appendUintProp(b, MetricTableConflicts, uint64(t.Conflicts))
		b = appendUintProp(b, MetricTableFiles, uint64(t.Files))
		b = appendFloatProp(b, MetricTableCommitLatency, float64(t.Latency)/float64(time.Millisecond))
		return appendUintProp(b, MetricTableFailures, failed)
	})
}

// FanOut is what one scheduled tick decided and started.
type FanOut struct {
	Function string
	// Workers is the cohort's size, the tick's own run included (1: it ran
	// alone); Started counts the worker invocations it started.
	Workers, Started int
	// Settle is how long the cohort took to gather (0 without a cohort).
	Settle time.Duration
}

// Audit is one audit's verdict over every partition.
type Audit struct {
	Function                        string
	Partitions, Objects, GapMarkers int
	Gaps, Overlaps                  int // unreported gaps and overlaps: each one a violation
}

var fanOutMetrics = []metricDef{
	{MetricWorkers, "Count"},
	{MetricWorkersStarted, "Count"},
	{MetricSettleTime, "Milliseconds"},
}

var auditMetrics = []metricDef{
	{MetricAuditPartitions, "Count"},
	{MetricAuditObjects, "Count"},
	{MetricAuditGapMarkers, "Count"},
	{MetricAuditGaps, "Count"},
	{MetricAuditOverlaps, "Count"},
}

// WriteFanOut writes a tick's fan-out line (dimension Function).
func WriteFanOut(w io.Writer, namespace string, now time.Time, f FanOut) error {
	if f.Workers < 0 || f.Started < 0 || f.Settle < 0 {
		return fmt.Errorf("%w: negative fan-out figures %+v", ErrInvalid, f)
	}
	return writeFunctionLine(w, namespace, now, f.Function, fanOutMetrics, func(b []byte) []byte {
		b = appendUintProp(b, MetricWorkers, uint64(f.Workers))
		b = appendUintProp(b, MetricWorkersStarted, uint64(f.Started))
		return appendFloatProp(b, MetricSettleTime, float64(f.Settle)/float64(time.Millisecond))
	})
}

// WriteAudit writes an audit's line (dimension Function). AuditGaps and
// AuditOverlaps count violations: the template alarms when either is above 0.
func WriteAudit(w io.Writer, namespace string, now time.Time, a Audit) error {
	if a.Partitions < 0 || a.Objects < 0 || a.GapMarkers < 0 || a.Gaps < 0 || a.Overlaps < 0 {
		return fmt.Errorf("%w: negative audit figures %+v", ErrInvalid, a)
	}
	return writeFunctionLine(w, namespace, now, a.Function, auditMetrics, func(b []byte) []byte {
		b = appendUintProp(b, MetricAuditPartitions, uint64(a.Partitions))
		b = appendUintProp(b, MetricAuditObjects, uint64(a.Objects))
		b = appendUintProp(b, MetricAuditGapMarkers, uint64(a.GapMarkers))
		b = appendUintProp(b, MetricAuditGaps, uint64(a.Gaps))
		return appendUintProp(b, MetricAuditOverlaps, uint64(a.Overlaps))
	})
}

// writeFunctionLine writes one line with the Function dimension and the
// values values appends, in the order of defs.
func writeFunctionLine(w io.Writer, namespace string, now time.Time, function string, defs []metricDef, values func([]byte) []byte) error {
	if err := ValidNamespace(namespace); err != nil {
		return err
	}
	if problem := dimensionValueProblem(function); problem != "" {
		return fmt.Errorf("%w: function name %s", ErrInvalid, problem)
	}
	b := appendHeader(make([]byte, 0, 512), namespace, now.UnixMilli(), runDims, defs)
	b = appendStringProp(b, DimFunction, function)
	_, err := writeLine(w, values(b))
	return err
}
