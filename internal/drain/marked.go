package drain

import "sync"

// MarkedGenerations remembers, across the runs of one process, which
// generation markers are known to be in S3, so that each is written once
// per process rather than once per run. The zero value is ready; a nil
// one writes (create-only) every run.
type MarkedGenerations struct{ keys sync.Map }

func (m *MarkedGenerations) has(key string) bool {
	if m == nil {
		return false
	}
	_, ok := m.keys.Load(key)
	return ok
}
