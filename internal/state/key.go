package state

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Key names one partition as seen by one consumer group.
type Key struct {
	Group, Stream, Topic string
	Partition            uint32
}

// idEscaper makes '/' usable as the field separator: names may contain it, and '%' itself is
// escaped so that decoding is unambiguous.
var idEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// ID is the DynamoDB partition-key string: group/stream/topic/partition with '%' and '/' escaped,
// so different keys never share an ID.
func (k Key) ID() string {
	return idEscaper.Replace(k.Group) + "/" + idEscaper.Replace(k.Stream) + "/" +
		idEscaper.Replace(k.Topic) + "/" + strconv.FormatUint(uint64(k.Partition), 10)
}

// String is the ID, for logs and errors.
func (k Key) String() string { return k.ID() }

// Validate reports an empty or non-UTF-8 name; DynamoDB strings must be valid UTF-8.
func (k Key) Validate() error {
	for _, f := range []struct{ name, v string }{{"group", k.Group}, {"stream", k.Stream}, {"topic", k.Topic}} {
		if f.v == "" {
			return fmt.Errorf("state: key %s: %s name is empty", k.ID(), f.name)
		}
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("state: key %q: %s name is not valid UTF-8", k.ID(), f.name)
		}
	}
	return nil
}

// ParseKeyID is the inverse of Key.ID. It accepts only the canonical form, so
// ParseKeyID(id).ID() == id whenever it succeeds.
func ParseKeyID(id string) (Key, error) {
	parts := strings.Split(id, "/")
	if len(parts) != 4 {
		return Key{}, fmt.Errorf("state: key id %q: want group/stream/topic/partition, got %d fields", id, len(parts))
	}
	var names [3]string
	for i, p := range parts[:3] {
		n, err := unescapeIDField(p)
		if err != nil {
			return Key{}, fmt.Errorf("state: key id %q: field %d: %w", id, i+1, err)
		}
		names[i] = n
	}
	p, err := strconv.ParseUint(parts[3], 10, 32)
	if err != nil || strconv.FormatUint(p, 10) != parts[3] {
		return Key{}, fmt.Errorf("state: key id %q: partition %q is not a canonical uint32", id, parts[3])
	}
	k := Key{Group: names[0], Stream: names[1], Topic: names[2], Partition: uint32(p)}
	if err := k.Validate(); err != nil {
		return Key{}, err
	}
	return k, nil
}

var errBadEscape = errors.New("only %25 and %2F escapes are allowed")

func unescapeIDField(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "%25"):
			b.WriteByte('%')
		case strings.HasPrefix(s[i:], "%2F"):
			b.WriteByte('/')
		default:
			return "", fmt.Errorf("bad escape at byte %d: %w", i, errBadEscape)
		}
		i += 2
	}
	return b.String(), nil
}
