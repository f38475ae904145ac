package parquet

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

type phase uint8

const (
	phaseIdle phase = iota
	phaseObserve
	phaseWrite
	phaseClosed
)

// ErrPhase is returned when a method is called out of the Reset → Observe
// → Begin → Write → Close order.
var ErrPhase = errors.New("parquet: call out of order (Reset, Observe…, Begin, Write…, Close)")

// Encoder writes the records of one object as one Parquet file, in two
// passes: Observe every record (pass 1 fixes the inferred schema), then
// Begin, Write every record (pass 2 streams row groups to the io.Writer as
// they fill) and Close. It keeps its buffers for the next object after
// Reset, and is not safe for concurrent use.
type Encoder struct {
	opts   Options
	env    pageEnv
	inf    inferrer
	sch    *schema
	sh     shredder
	sc     jsonscan.Scanner // the inferrer's and the shredder's, see newValueScanner
	src    Source
	stream []byte
	topic  []byte
	phase  phase
	out    countWriter
	groups []rowGroupMeta
	marks  []colMark
	pool   []*column
	hdrs   []Header
	hdrs2  []Header
	keys   []byte
	text   []byte
	rows   int64
	gRows  int64
	gBytes int64
	tw     thriftWriter
}

// NewEncoder checks opts and returns an Encoder; call Reset before the
// first object.
func NewEncoder(opts Options) (*Encoder, error) {
	switch opts.Payload {
	case PayloadJSON:
	case PayloadText, PayloadRaw, PayloadProto, PayloadFlatbuffer, PayloadAvro:
		if opts.Schema != nil {
			return nil, fmt.Errorf("parquet: a pinned schema needs payload schema json, not %q", opts.Payload)
		}
	default:
		return nil, fmt.Errorf("parquet: unknown payload schema %q (accepted: json, text, raw, proto, flatbuffer, avro)", opts.Payload)
	}
	if opts.Schema != nil {
		for _, name := range opts.Schema.names() {
			if r := reservedClash(name, opts); r != "" {
				return nil, fmt.Errorf("parquet: pinned field %q has the name of the %s column", name, r)
			}
		}
	}
	if opts.RowGroupBytes <= 0 {
		opts.RowGroupBytes = DefaultRowGroupBytes
	}
	if opts.RowGroupRows <= 0 {
		opts.RowGroupRows = DefaultRowGroupRows
	}
	if opts.PageBytes <= 0 {
		opts.PageBytes = DefaultPageBytes
	}
	if opts.DictionaryBytes <= 0 {
		opts.DictionaryBytes = DefaultDictionaryBytes
	}
	comp, err := newCompressor(opts.Compression)
	if err != nil {
		return nil, err
	}
	e := &Encoder{opts: opts, sc: newValueScanner()}
	e.inf.sc = &e.sc
	e.env = pageEnv{comp: comp, pageBytes: opts.PageBytes, pageRows: pageRows, dictBytes: opts.DictionaryBytes}
	return e, nil
}

// reservedClash names the top-level column a pinned field name would take.
func reservedClash(name string, o Options) string {
	for _, r := range reservedNames(o, false, o.KeepExtra) {
		if strings.EqualFold(name, r) {
			return r
		}
	}
	return ""
}

// reservedNames lists the top-level names taken before payload fields.
func reservedNames(o Options, payload, extra bool) []string {
	var names []string
	if o.IncludeMetadata {
		names = append(names, colOffset, colTimestamp, colStream, colTopic, colPartition)
	}
	if o.IncludeHeaders {
		names = append(names, colHeaders)
	}
	if payload {
		names = append(names, colPayload)
	}
	if extra {
		names = append(names, colExtra)
	}
	return names
}

// Reset starts a new object from src, forgetting the previous one (written
// or not) but keeping the buffers.
func (e *Encoder) Reset(src Source) {
	e.src = src
	e.stream = jsonscan.AppendLossy(e.stream[:0], []byte(src.Stream))
	e.topic = jsonscan.AppendLossy(e.topic[:0], []byte(src.Topic))
	e.inf.reset()
	e.sch = nil
	e.out = countWriter{}
	e.groups = e.groups[:0]
	e.rows, e.gRows, e.gBytes = 0, 0, 0
	e.phase = phaseObserve
}

// Observe is pass 1: it learns the payload's fields and types from one
// record. It is needed only for payload schema json without a pinned
// schema (elsewhere it does nothing), and must see exactly the records that
// Write will see, in the same (offset) order: the schema is their union and
// its columns come in order of first appearance. Payloads that are not
// valid JSON are ignored (Write rejects them).
func (e *Encoder) Observe(payload []byte) error {
	if e.phase != phaseObserve {
		return ErrPhase
	}
	if e.opts.Payload == PayloadJSON && e.opts.Schema == nil {
		e.inf.observe(payload)
	}
	return nil
}

// Begin fixes the schema and writes the file's leading magic to w. The
// Encoder writes to w only from Begin, Write and Close, never concurrently,
// and does not close it.
func (e *Encoder) Begin(w io.Writer) error {
	if e.phase != phaseObserve {
		return ErrPhase
	}
	sch, err := e.buildSchema()
	if err != nil {
		return err
	}
	e.sch = sch
	e.sh = shredder{sch: e.sch, kbuf: e.sh.kbuf, sbuf: e.sh.sbuf, xbuf: e.sh.xbuf, stamp: e.sh.stamp, sc: &e.sc}
	e.adoptColumns()
	e.out = countWriter{w: w}
	e.phase = phaseWrite
	return e.out.write([]byte("PAR1"))
}

// buildSchema assembles the top-level columns for the options and what
// pass 1 saw.
func (e *Encoder) buildSchema() (*schema, error) {
	o := e.opts
	s := &schema{}
	if o.IncludeMetadata {
		s.offset = &node{name: colOffset, kind: kindInt64, required: true}
		s.timestamp = &node{name: colTimestamp, kind: kindTimestamp, required: true}
		s.stream = &node{name: colStream, kind: kindText, required: true}
		s.topic = &node{name: colTopic, kind: kindText, required: true}
		s.partition = &node{name: colPartition, kind: kindInt64, required: true}
	}
	if o.IncludeHeaders {
		s.headers = mapNode(colHeaders)
	}
	switch {
	case o.Payload != PayloadJSON:
		k := kindBytes
		if o.Payload == PayloadText {
			k = kindText
		}
		s.payload = &node{name: colPayload, kind: k, required: true}
	case o.Schema != nil:
		s.fields = o.Schema.fieldsNode()
		s.dropUnknown = !o.KeepExtra
		if o.KeepExtra {
			s.extra = &node{name: colExtra, kind: kindJSON}
		}
	default:
		s.inferred = true
		wide := e.inf.root.mask&tDeep != 0
		s.fields = resolveStruct(&e.inf.root, reservedNames(o, e.inf.nonObject, wide))
		s.fields.kind = kindStruct
		if o.Conform != nil {
			f, err := conform(s.fields, o.Conform)
			if err != nil {
				return nil, err
			}
			s.fields = f
		}
		if wide {
			s.extra = &node{name: colExtra, kind: kindJSON}
		}
		if e.inf.nonObject || (s.fields.leafCount() == 0 && !o.IncludeMetadata && !o.IncludeHeaders) {
			s.payload = &node{name: colPayload, kind: kindJSON}
		}
	}
	s.finish()
	for _, n := range s.leaves {
		n.col.byteStats = n.col.ptype == typeByteArray && slices.Contains(o.StatsColumns, n.path)
	}
	return s, nil
}

// leafCount counts the columns a struct's children would write.
func (n *node) leafCount() int {
	c := 0
	for _, k := range n.children {
		if k.hasColumn() {
			c++
		}
	}
	return c
}

// adoptColumns gives the schema's leaves the pooled columns of earlier
// objects, so that their buffers are reused.
func (e *Encoder) adoptColumns() {
	for i, l := range e.sch.leaves {
		fresh := l.col
		fresh.path = leafPath(e.sch, i)
		if i < len(e.pool) {
			c := e.pool[i]
			c.ptype, c.maxDef, c.maxRep, c.path, c.byteStats = fresh.ptype, fresh.maxDef, fresh.maxRep, fresh.path, fresh.byteStats
			l.col = c
		} else {
			e.pool = append(e.pool, fresh)
		}
		l.col.startChunk()
	}
	e.marks = slices.Grow(e.marks[:0], len(e.sch.leaves))[:len(e.sch.leaves)]
}

// Write is pass 2: it shreds rec into the current row group, and writes the
// row group out when it is full. A record that cannot be a row is not
// written and leaves no trace: Write returns a *RecordError saying why, and
// the Encoder goes on. Any other error (from the io.Writer) is final.
func (e *Encoder) Write(rec *Record) error {
	if e.phase != phaseWrite {
		return ErrPhase
	}
	if e.out.err != nil {
		return e.out.err
	}
	leaves := e.sch.leaves
	for i, l := range leaves {
		e.marks[i] = l.col.mark()
	}
	if err := e.shred(rec); err != nil {
		for i, l := range leaves {
			l.col.rollback(e.marks[i])
		}
		if errors.Is(err, ErrSchemaMismatch) && skipValueAll(&e.sc, rec.Payload) < 0 {
			err = fmt.Errorf("%w (and the schema does not fit it either)", ErrInvalidJSON)
		}
		return &RecordError{Offset: rec.Offset, Err: err}
	}
	e.rows++
	e.gRows++
	e.gBytes += int64(len(rec.Payload))
	for _, h := range rec.Headers {
		e.gBytes += int64(len(h.Key) + len(h.Value))
	}
	for _, l := range leaves {
		l.col.afterRecord(&e.env)
	}
	if e.gRows >= e.opts.RowGroupRows || e.gBytes >= e.opts.RowGroupBytes {
		return e.flushRowGroup()
	}
	return nil
}

// newValueScanner returns the Scanner that validates the values the
// inferrer and the shredder do not take apart themselves: its nesting limit
// is encoding/json's (counted from each such value), so that "valid JSON"
// here agrees with the JSON formats' validation.
func newValueScanner() jsonscan.Scanner {
	return jsonscan.Scanner{MaxDepth: jsonscan.MaxDepthLimit}
}

// skipValueAll reports whether p is one valid JSON value (≥ 0) or not.
func skipValueAll(sc *jsonscan.Scanner, p []byte) int {
	i := jsonscan.SkipSpace(p, 0)
	end := sc.ScanValue(p, i)
	if end < 0 || jsonscan.SkipSpace(p, end) != len(p) {
		return -1
	}
	return end
}

// shred writes one record's entries into every leaf.
func (e *Encoder) shred(rec *Record) error {
	s := e.sch
	if s.offset != nil {
		s.offset.col.addInt64(int64(rec.Offset), 0, 0)
		s.timestamp.col.addInt64(int64(rec.Timestamp), 0, 0)
		s.stream.col.addBytes(e.stream, 0, 0)
		s.topic.col.addBytes(e.topic, 0, 0)
		s.partition.col.addInt64(int64(e.src.Partition), 0, 0)
	}
	if s.headers != nil {
		e.writeHeaders(rec.Headers)
	}
	switch {
	case s.fields != nil:
		return e.sh.payload(rec.Payload)
	case s.payload.kind == kindText:
		e.text = jsonscan.AppendLossy(e.text[:0], rec.Payload)
		s.payload.col.addBytes(e.text, 0, 0)
	default:
		s.payload.col.addBytes(rec.Payload, 0, 0)
	}
	return nil
}

// flushRowGroup writes the current row group's column chunks.
func (e *Encoder) flushRowGroup() error {
	if e.gRows == 0 {
		return e.out.err
	}
	leaves := e.sch.leaves
	g := rowGroupMeta{
		columns:    make([]chunkMeta, len(leaves)),
		numRows:    e.gRows,
		fileOffset: e.out.off,
		ordinal:    int16(len(e.groups)),
	}
	for i, l := range leaves {
		if err := l.col.finishChunk(&e.env, &e.out, &g.columns[i]); err != nil {
			return err
		}
		g.totalByteSize += g.columns[i].totalUncompressed
		g.totalCompressed += g.columns[i].totalCompressed
		l.col.startChunk()
	}
	e.groups = append(e.groups, g)
	e.gRows, e.gBytes = 0, 0
	return e.out.err
}

// Close writes the last row group and the footer. It does not close the
// io.Writer. After Close, Reset starts the next object.
func (e *Encoder) Close() error {
	if e.phase != phaseWrite {
		return ErrPhase
	}
	e.phase = phaseClosed
	if err := e.flushRowGroup(); err != nil {
		return err
	}
	e.tw.reset()
	e.tw.fileMetaData(e.sch.elements, e.rows, e.groups, len(e.sch.leaves))
	n := len(e.tw.buf)
	e.tw.buf = append(e.tw.buf, byte(n), byte(n>>8), byte(n>>16), byte(n>>24), 'P', 'A', 'R', '1')
	return e.out.write(e.tw.buf)
}

// Rows is the number of records written so far.
func (e *Encoder) Rows() int64 { return e.rows }

// countWriter tracks the file offset and keeps the first write error.
type countWriter struct {
	w   io.Writer
	off int64
	err error
}

func (c *countWriter) write(b []byte) error {
	if c.err != nil {
		return c.err
	}
	n, err := c.w.Write(b)
	c.off += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		c.err = fmt.Errorf("parquet: write: %w", err)
	}
	return c.err
}

// leafPath is the column's path in the schema: the names from the top
// level down (the payload object contributes none).
func leafPath(s *schema, leaf int) []string {
	var path []string
	var walk func(n *node, names []string) bool
	walk = func(n *node, names []string) bool {
		if leaf < n.leafLo || leaf >= n.leafHi {
			return false
		}
		names = append(names, n.name)
		switch n.kind {
		case kindList:
			names = append(names, "list")
		case kindMap:
			names = append(names, "key_value")
		}
		if n.col != nil {
			path = slices.Clone(names)
			return true
		}
		for _, c := range n.children {
			if c.hasColumn() && walk(c, names) {
				return true
			}
		}
		return false
	}
	for _, n := range s.top() {
		if walk(n, nil) {
			break
		}
	}
	return path
}
