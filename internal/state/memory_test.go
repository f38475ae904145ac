package state

import (
	"testing"
	"time"
)

func TestMemoryStore(t *testing.T) {
	runStoreSuite(t, func(t *testing.T, now func() time.Time) Store { return NewMemory(now) }, nil)
}
