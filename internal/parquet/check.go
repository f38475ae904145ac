package parquet

import (
	"errors"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/jsonscan"
)

// Checker tells whether a payload fits a pinned schema, deciding exactly as
// Write does (the same shredding code, undone after each payload), without
// writing anything. A caller that must know before it encodes a file which
// records the file will reject — to count them, or to refuse them at once —
// checks each payload as it arrives. Like an Encoder it keeps buffers and
// is not safe for concurrent use.
type Checker struct {
	sch   *schema
	sh    shredder
	sc    jsonscan.Scanner
	marks []colMark
}

// NewChecker returns a Checker for opts, which must pin a schema (an
// inferred schema fits every valid JSON payload by construction).
func NewChecker(opts Options) (*Checker, error) {
	if opts.Schema == nil {
		return nil, errors.New("parquet: a Checker needs a pinned schema")
	}
	opts.IncludeMetadata, opts.IncludeHeaders = false, false // only the payload columns are checked
	e, err := NewEncoder(opts)
	if err != nil {
		return nil, err
	}
	sch, err := e.buildSchema() // a pinned schema: nothing to conform, no error
	if err != nil {
		return nil, err
	}
	c := &Checker{sch: sch, sc: newValueScanner()}
	for _, l := range c.sch.leaves {
		l.col.startChunk()
		l.col.useDict = false // values are undone anyway: skip the hashing
	}
	c.sh = shredder{sch: c.sch, sc: &c.sc}
	c.marks = make([]colMark, len(c.sch.leaves))
	return c, nil
}

// Check returns nil when Write would accept payload, else the error Write's
// *RecordError would wrap (ErrSchemaMismatch or ErrInvalidJSON, naming the
// field, never the value).
func (c *Checker) Check(payload []byte) error {
	leaves := c.sch.leaves
	for i, l := range leaves {
		c.marks[i] = l.col.mark()
	}
	err := c.sh.payload(payload)
	for i, l := range leaves {
		l.col.rollback(c.marks[i])
	}
	if err != nil && errors.Is(err, ErrSchemaMismatch) && skipValueAll(&c.sc, payload) < 0 {
		err = fmt.Errorf("%w (and the schema does not fit it either)", ErrInvalidJSON)
	}
	return err
}
