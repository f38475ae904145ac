package drain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/fields"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// writeUnit writes a unit split by payload values: each value's object
// (error object first, as for any data object), create-only, in the order
// of their keys, then the unit's manifest under unitKey, the intent's key.
// Every one of them is a pure function of the range, so a recovery renders
// the same bytes: the objects written before a crash are met again as they
// are, and the manifest, written last, says the unit is whole. Built in
// memory, the values are the unit's; else the range is read once to find
// them and once per value (twice for Parquet) to stream its object.
func (ow *objectWriter) writeUnit(ctx context.Context, unitKey string, ts uint64, s *sealed) (s3store.Result, errorLines, error) {
	name, ok := keys.ParseName(unitKey)
	if !ok || !name.Manifest {
		return s3store.Result{}, errorLines{}, fmt.Errorf("internal error: %s is no unit's manifest", unitKey)
	}
	if name.Ext != batch.ObjectExt(ow.format, ow.comp) {
		// Begun in another format (the configuration changed since): its
		// value objects may be partly written, so it is finished in its
		// own format, re-read from Iggy.
		w, err := ow.inFormat(name.Ext)
		if err != nil {
			return s3store.Result{}, errorLines{}, fmt.Errorf("finish the unit %s in its own format: %w", unitKey, err)
		}
		s := &sealed{first: s.first, last: s.last, done: func() {}}
		res, el, err := w.writeUnit(ctx, unitKey, ts, s)
		ow.renderedTS, ow.unitValues = w.renderedTS, w.unitValues
		return res, el, err
	}
	if err := ow.p.hook(StepMidUpload); err != nil {
		return s3store.Result{}, errorLines{}, err
	}
	var (
		man = fields.Manifest{Partition: name.Partition, First: s.first, Last: s.last, Generation: name.Generation, Records: s.last - s.first + 1}
		el  errorLines
		res s3store.Result
		err error
	)
	if u, inMemory := s.acc.(*valueUnit); inMemory && !u.Spilled() {
		err = ow.writeValues(ctx, unitKey, ts, s, u, &man, &el, &res)
	} else {
		err = ow.streamValues(ctx, unitKey, ts, s, &man, &el, &res)
	}
	if err != nil {
		return res, el, err
	}
	body := man.Marshal()                               // sorts man.Objects by key
	ow.unitValues = make([]string, 0, len(man.Objects)) // the unit's Written keeps it
	for _, o := range man.Objects {
		ow.unitValues = append(ow.unitValues, o.Key)
	}
	mres, err := ow.p.r.Objects.Put(ctx, s3store.Object{Key: unitKey, ContentType: "application/json"}, body)
	res.Bytes += mres.Bytes
	res.Retries += mres.Retries
	res.Existed = mres.Existed
	return res, el, err
}

// writeValues writes the values' objects of a unit built in memory,
// valuePuts at a time: a unit of many values is many small objects, and
// one PUT after the other would wait on each one's round trip. They are
// settled in key order once all are done (the manifest lists them so).
func (ow *objectWriter) writeValues(ctx context.Context, unitKey string, ts uint64, s *sealed, u *valueUnit, man *fields.Manifest, el *errorLines, res *s3store.Result) error {
	values := slices.Clone(u.Values())
	slices.Sort(values)
	type put struct {
		key string
		r   s3store.Result
		el  errorLines
		err error
	}
	puts := make([]put, len(values))
	for i, v := range values {
		key, err := ow.valueKey(unitKey, ts, v)
		if err != nil {
			return err
		}
		puts[i].key = key
	}
	sem := make(chan struct{}, valuePuts)
	var wg sync.WaitGroup
	for i, v := range values {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p := &puts[i]
			p.r, p.el, p.err = ow.renderAndPut(ctx, p.key, ts, u.Part(v), s, nil)
		}()
	}
	wg.Wait()
	for i, v := range values {
		part, p := u.Part(v), puts[i]
		span := valueSpan{records: uint64(part.Len()), first: part.First(), last: part.Last()}
		if err := ow.valueWritten(p.key, v, span, p.el, p.r, p.err, man, el, res); err != nil {
			return err
		}
	}
	return nil
}

// valuePuts bounds the value objects of one unit written at once.
const valuePuts = 8

// streamValues writes the values' objects of a unit re-read from Iggy.
func (ow *objectWriter) streamValues(ctx context.Context, unitKey string, ts uint64, s *sealed, man *fields.Manifest, el *errorLines, res *s3store.Result) error {
	values := ow.p.valueReader()
	counts := map[string]valueSpan{}
	if err := ow.render(ctx, s.first, s.last, false, func(m *batch.Message) error {
		v := values.Value(ow.enc, m)
		c, seen := counts[v]
		if !seen {
			c.first = m.Offset
		}
		c.records, c.last = c.records+1, m.Offset
		counts[v] = c
		return nil
	}); err != nil {
		return err
	}
	sorted := make([]string, 0, len(counts))
	for v := range counts {
		sorted = append(sorted, v)
	}
	slices.Sort(sorted)
	for _, v := range sorted {
		key, err := ow.valueKey(unitKey, ts, v)
		if err != nil {
			return err
		}
		keep := func(m *batch.Message) bool { return values.Value(ow.enc, m) == v }
		if err := ow.streamErrorsOf(ctx, key, ts, s, keep); err != nil {
			return err
		}
		r, vel, err := ow.stream(ctx, key, s.first, s.last, keep)
		if err := ow.valueWritten(key, v, counts[v], vel, r, err, man, el, res); err != nil {
			return err
		}
	}
	return nil
}

// valueSpan is what one value's object holds of a unit.
type valueSpan struct{ records, first, last uint64 }

// valueKey is the key of value's object of the unit at unitKey.
func (ow *objectWriter) valueKey(unitKey string, ts uint64, value string) (string, error) {
	key, ok := ow.l.names.ValueObject(unitKey, ts, fields.Segments(value))
	if !ok {
		return "", fmt.Errorf("internal error: no value object of %q for the unit %s", value, unitKey)
	}
	return key, nil
}

// valueWritten settles the write of one value's object: an object already
// there with other bytes holds the same records (its key is its value and
// range, rendered by another configuration or run) and is kept and
// reported, as a data object's conflict is. It adds the object to the
// manifest and then calls StepValueWritten.
func (ow *objectWriter) valueWritten(key, value string, span valueSpan, vel errorLines, r s3store.Result, err error, man *fields.Manifest, el *errorLines, res *s3store.Result) error {
	var ce *s3store.ConflictError
	switch {
	case errors.As(err, &ce):
		ow.ps.Conflicts++
		ow.p.log.Warn("a value object already exists with other bytes; kept as it is (same value and offsets, rendered by another configuration or run)",
			"key", key, "stored_bytes", ce.ExistingSize, "rendered_bytes", ce.SentSize)
		r.Bytes = ce.ExistingSize
	case err != nil:
		return err
	}
	res.Bytes += r.Bytes
	res.Retries += r.Retries
	el.rejected += vel.rejected
	el.invalid += vel.invalid
	el.conflicts += vel.conflicts
	man.Objects = append(man.Objects, fields.ValueObject{Key: key, Value: fields.Segments(value), Records: span.records, Rejected: uint64(vel.rejected),
		First: span.first, Last: span.last, Bytes: r.Bytes})
	return ow.p.hook(StepValueWritten)
}

// inFormat is a writer of ow's partition in the format and compression of
// the object extension ext, with the configuration's other settings.
func (ow *objectWriter) inFormat(ext string) (*objectWriter, error) {
	f, z, ok := batch.ParseExt(ext)
	if !ok {
		return nil, fmt.Errorf("unknown object extension %q", ext)
	}
	o := ow.p.r.Options.Records
	o.Schema, o.Format = ow.p.stream.Schema, f
	enc, err := batch.NewEncoder(ow.p.bp, o)
	if err != nil {
		return nil, err
	}
	w := *ow
	w.enc, w.format, w.comp = enc, f, z
	w.zbufs = make(chan []byte, 2)
	return &w, nil
}

// finishUnit writes the unfinished unit in, re-read from Iggy, where its
// key says (under a stream or topic's earlier names, when they changed);
// false when its messages are no longer in Iggy (the caller fences it).
func (ow *objectWriter) finishUnit(ctx context.Context, in state.Intent) (bool, error) {
	if n, _ := keys.ParseName(in.ObjectKey); n.Fingerprint != ow.p.r.Options.Names.Fingerprint() {
		return false, fmt.Errorf("%s: %w", in.ObjectKey, errUnitChanged)
	}
	s := &sealed{first: in.First, last: in.Last, done: func() {}}
	_, _, err := ow.writeUnit(ctx, in.ObjectKey, in.FirstTimestamp, s)
	var miss *missingError
	var ce *s3store.ConflictError
	switch {
	case errors.As(err, &miss):
		return false, nil
	case errors.As(err, &ce) || err == nil:
		return true, nil // a manifest with other bytes holds the same unit
	}
	return false, err
}

// isUnitKey reports a unit manifest's key.
func isUnitKey(key string) bool {
	n, ok := keys.ParseName(key)
	return ok && n.Manifest
}
