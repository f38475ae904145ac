package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Dimension and metric names as CloudWatch shows them; template.yaml's lag alarm
// refers to MetricLag with the single dimension DimFunction.
const (
	DimFunction  = "Function"
	DimStream    = "Stream"
	DimTopic     = "Topic"
	DimPartition = "Partition"

	MetricObjects          = "Objects"
	MetricMessages         = "Messages"
	MetricBytes            = "Bytes"
	MetricLag              = "Lag"
	MetricGapMessages      = "GapMessages"
	MetricInvalidPayloads  = "InvalidPayloads"
	MetricMalformedHeaders = "MalformedHeaders"
	MetricRetries          = "Retries"
	MetricDuration         = "Duration"
	MetricFailed           = "Failed"
	MetricPartitions       = "Partitions"
)

// Partition is what one run did on one partition.
type Partition struct {
	Stream, Topic string
	Partition     uint32
	// Lag is the number of messages left in Iggy after the run.
	Objects, Messages, Bytes, Lag, GapMessages, InvalidPayloads, MalformedHeaders, Retries uint64
}

// Run is one drain run (one Lambda invocation or one poller cycle).
type Run struct {
	Function   string
	Duration   time.Duration
	Failed     bool
	Partitions []Partition
}

type metricDef struct{ name, unit string }

var partitionMetrics = []metricDef{
	{MetricObjects, "Count"},
	{MetricMessages, "Count"},
	{MetricBytes, "Bytes"},
	{MetricLag, "Count"},
	{MetricGapMessages, "Count"},
	{MetricInvalidPayloads, "Count"},
	{MetricMalformedHeaders, "Count"},
	{MetricRetries, "Count"},
}

// runMetrics are the function-level aggregates: counters are summed over the
// partitions, Lag is the largest partition lag so that one alarm with the
// Maximum statistic covers every partition whichever member drained it.
var runMetrics = []metricDef{
	{MetricDuration, "Milliseconds"},
	{MetricFailed, "Count"},
	{MetricPartitions, "Count"},
	{MetricObjects, "Count"},
	{MetricMessages, "Count"},
	{MetricBytes, "Bytes"},
	{MetricLag, "Count"},
	{MetricGapMessages, "Count"},
	{MetricInvalidPayloads, "Count"},
	{MetricMalformedHeaders, "Count"},
	{MetricRetries, "Count"},
}

// runMetricsNoLag serves a run that drained no partition: its lag is unknown,
// and a zero would report "no backlog" where none was measured.
var runMetricsNoLag = withoutMetric(runMetrics, MetricLag)

var (
	partitionDims = []string{DimFunction, DimStream, DimTopic, DimPartition}
	runDims       = []string{DimFunction}
)

// maxDimensionValue is CloudWatch's limit on a dimension value's length.
const maxDimensionValue = 1024

// ErrInvalid marks input that cannot become valid EMF.
var ErrInvalid = errors.New("invalid metrics input")

// WriteEMF writes one EMF line per partition (dimensions Function, Stream,
// Topic, Partition) and then one run line (dimension Function) with the run's
// duration in milliseconds, Failed (0 or 1), the number of partitions, the
// counters summed over the partitions and the largest partition lag (omitted
// when the run drained no partition). Each line is a single Write, so lines do
// not interleave with other writers of w that also write whole lines.
func WriteEMF(w io.Writer, namespace string, now time.Time, r Run) error {
	if err := ValidNamespace(namespace); err != nil {
		return err
	}
	if problem := dimensionValueProblem(r.Function); problem != "" {
		return fmt.Errorf("%w: function name %s", ErrInvalid, problem)
	}
	if r.Duration < 0 {
		return fmt.Errorf("%w: run duration %v is negative", ErrInvalid, r.Duration)
	}
	for _, p := range r.Partitions {
		if problem := dimensionValueProblem(p.Stream); problem != "" {
			return fmt.Errorf("%w: stream name of partition %d %s", ErrInvalid, p.Partition, problem)
		}
		if problem := dimensionValueProblem(p.Topic); problem != "" {
			return fmt.Errorf("%w: topic name of partition %d of stream %q %s", ErrInvalid, p.Partition, p.Stream, problem)
		}
	}

	ts := now.UnixMilli()
	// Writers may not retain what they are given, so one buffer serves every line.
	line := make([]byte, 0, 1024)
	var total Partition
	for _, p := range r.Partitions {
		total.Objects += p.Objects
		total.Messages += p.Messages
		total.Bytes += p.Bytes
		total.Lag = max(total.Lag, p.Lag)
		total.GapMessages += p.GapMessages
		total.InvalidPayloads += p.InvalidPayloads
		total.MalformedHeaders += p.MalformedHeaders
		total.Retries += p.Retries

		b := appendHeader(line[:0], namespace, ts, partitionDims, partitionMetrics)
		b = appendStringProp(b, DimFunction, r.Function)
		b = appendStringProp(b, DimStream, p.Stream)
		b = appendStringProp(b, DimTopic, p.Topic)
		// Dimension values are strings in EMF.
		b = appendPropName(b, DimPartition)
		b = append(b, '"')
		b = strconv.AppendUint(b, uint64(p.Partition), 10)
		b = append(b, '"')
		b = appendCounters(b, p, true)
		b, err := writeLine(w, b)
		if err != nil {
			return err
		}
		line = b
	}

	defs := runMetrics
	withLag := len(r.Partitions) > 0
	if !withLag {
		defs = runMetricsNoLag
	}
	b := appendHeader(line[:0], namespace, ts, runDims, defs)
	b = appendStringProp(b, DimFunction, r.Function)
	b = appendFloatProp(b, MetricDuration, float64(r.Duration)/float64(time.Millisecond))
	failed := uint64(0)
	if r.Failed {
		failed = 1
	}
	b = appendUintProp(b, MetricFailed, failed)
	b = appendUintProp(b, MetricPartitions, uint64(len(r.Partitions)))
	b = appendCounters(b, total, withLag)
	_, err := writeLine(w, b)
	return err
}

// ValidNamespace reports whether CloudWatch accepts ns as a custom namespace.
func ValidNamespace(ns string) error {
	switch {
	case ns == "":
		return fmt.Errorf("%w: metrics namespace is empty", ErrInvalid)
	case len(ns) > 255:
		return fmt.Errorf("%w: metrics namespace is %d characters long; at most 255 are allowed", ErrInvalid, len(ns))
	case strings.HasPrefix(ns, "AWS/"):
		return fmt.Errorf("%w: metrics namespace %q: the AWS/ prefix is reserved for AWS services", ErrInvalid, ns)
	case ns[0] == ':':
		return fmt.Errorf("%w: metrics namespace %q must not start with ':'", ErrInvalid, ns)
	}
	for _, c := range ns {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-/#: ", c)) {
			return fmt.Errorf("%w: metrics namespace %q contains %q; allowed are letters, digits, space and . _ - / # :", ErrInvalid, ns, c)
		}
	}
	return nil
}

// dimensionValueProblem says what makes v unusable as a dimension value, or "".
func dimensionValueProblem(v string) string {
	switch {
	case strings.TrimSpace(v) == "":
		return "is empty"
	case len(v) > maxDimensionValue:
		return fmt.Sprintf("is %d bytes long; CloudWatch allows %d", len(v), maxDimensionValue)
	case !utf8.ValidString(v):
		return fmt.Sprintf("%q is not valid UTF-8", v)
	}
	return ""
}

func withoutMetric(defs []metricDef, name string) []metricDef {
	out := make([]metricDef, 0, len(defs))
	for _, d := range defs {
		if d.name != name {
			out = append(out, d)
		}
	}
	return out
}

func writeLine(w io.Writer, b []byte) ([]byte, error) {
	b = append(b, '}', '\n')
	if _, err := w.Write(b); err != nil {
		return b, fmt.Errorf("metrics: write EMF line: %w", err)
	}
	return b, nil
}

// appendHeader opens the line's object and writes its _aws metadata; the
// caller appends the top-level values and writeLine closes the object.
func appendHeader(b []byte, namespace string, ts int64, dims []string, metrics []metricDef) []byte {
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = appendString(b, namespace)
	b = append(b, `,"Dimensions":[[`...)
	for i, d := range dims {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, d)
	}
	b = append(b, `]],"Metrics":[`...)
	for i, m := range metrics {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":`...)
		b = appendString(b, m.name)
		b = append(b, `,"Unit":`...)
		b = appendString(b, m.unit)
		b = append(b, '}')
	}
	return append(b, "]}]}"...)
}

func appendCounters(b []byte, p Partition, withLag bool) []byte {
	b = appendUintProp(b, MetricObjects, p.Objects)
	b = appendUintProp(b, MetricMessages, p.Messages)
	b = appendUintProp(b, MetricBytes, p.Bytes)
	if withLag {
		b = appendUintProp(b, MetricLag, p.Lag)
	}
	b = appendUintProp(b, MetricGapMessages, p.GapMessages)
	b = appendUintProp(b, MetricInvalidPayloads, p.InvalidPayloads)
	b = appendUintProp(b, MetricMalformedHeaders, p.MalformedHeaders)
	return appendUintProp(b, MetricRetries, p.Retries)
}

func appendStringProp(b []byte, name, v string) []byte {
	b = appendPropName(b, name)
	return appendString(b, v)
}

func appendUintProp(b []byte, name string, v uint64) []byte {
	b = appendPropName(b, name)
	return strconv.AppendUint(b, v, 10)
}

func appendFloatProp(b []byte, name string, v float64) []byte {
	b = appendPropName(b, name)
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

func appendPropName(b []byte, name string) []byte {
	b = append(b, ',')
	b = appendString(b, name)
	return append(b, ':')
}

// appendString appends s as a JSON string. Inputs were checked to be valid
// UTF-8, so json.Marshal cannot fail or alter them; names and most values
// need no escaping and skip it.
func appendString(b []byte, s string) []byte {
	if plainJSON(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
