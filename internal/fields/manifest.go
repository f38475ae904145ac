package fields

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
)

// Manifest lists the value objects of one unit: the offsets First..Last
// of one partition's generation, split into one object per value. Written
// create-only after every object it lists, it is the unit's proof: its
// objects together hold every offset of the range exactly once (their
// Records add up to the range), each in the folder of its value.
type Manifest struct {
	Partition  uint32 `json:"partition"`
	First      uint64 `json:"first"`
	Last       uint64 `json:"last"`
	Generation uint32 `json:"generation,omitempty"`
	// Records counts the range's offsets: Last-First+1.
	Records uint64        `json:"records"`
	Objects []ValueObject `json:"objects"`
}

// ValueObject is one value's object of a unit.
type ValueObject struct {
	Key string `json:"key"`
	// Value is the object's folder segments, one per payload field.
	Value []string `json:"value"`
	// Records counts the unit's offsets the object holds; Rejected those
	// of them in its error object instead (invalid_payload =
	// "error_object"), whose offsets its range covers as a data object's do.
	Records  uint64 `json:"records"`
	Rejected uint64 `json:"rejected,omitempty"`
	// First and Last are the first and the last offset it holds.
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	// Bytes is the object's stored size.
	Bytes int64 `json:"bytes"`
}

// Marshal renders m as its stored bytes: objects by key, so that every
// rendering of a unit gives the same bytes.
func (m *Manifest) Marshal() []byte {
	sort.Slice(m.Objects, func(i, j int) bool { return m.Objects[i].Key < m.Objects[j].Key })
	b, _ := json.Marshal(m) // plain fields only: cannot fail
	return append(b, '\n')
}

// ErrInvalidManifest is wrapped by ParseManifest's errors.
var ErrInvalidManifest = errors.New("invalid unit manifest")

// ParseManifest reads a manifest's stored bytes and checks that it can
// hold: a range, and objects whose records add up to it.
func ParseManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %w", ErrInvalidManifest, err)
	}
	if m.First > m.Last || m.Last-m.First == math.MaxUint64 || m.Records != m.Last-m.First+1 {
		return m, fmt.Errorf("%w: records %d for offsets %d..%d", ErrInvalidManifest, m.Records, m.First, m.Last)
	}
	var sum uint64
	for _, o := range m.Objects {
		if o.Key == "" || o.Records == 0 || o.Rejected > o.Records || o.First > o.Last || o.First < m.First || o.Last > m.Last || o.Last-o.First+1 < o.Records {
			return m, fmt.Errorf("%w: object %q holds %d records (%d rejected)", ErrInvalidManifest, o.Key, o.Records, o.Rejected)
		}
		if sum += o.Records; sum < o.Records {
			return m, fmt.Errorf("%w: its objects' records overflow", ErrInvalidManifest)
		}
	}
	if sum != m.Records {
		return m, fmt.Errorf("%w: its objects hold %d records, its range %d", ErrInvalidManifest, sum, m.Records)
	}
	return m, nil
}
