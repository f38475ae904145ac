package s3store

import (
	"errors"
	"fmt"
)

// ErrConflict is wrapped by the error of a create-only write that met an
// existing object holding other bytes: the object is left as it is.
var ErrConflict = errors.New("s3: the key already holds an object with other content")

// ConflictError says which key was already taken, and the sizes compared.
type ConflictError struct {
	Key          string
	ExistingSize int64
	SentSize     int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("s3: %s already exists with other content (%d bytes stored, %d bytes sent); not overwritten", e.Key, e.ExistingSize, e.SentSize)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
