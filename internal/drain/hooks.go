package drain

import (
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// Hook is a value a run calls at its hook points: it implements one or more
// of the interfaces below, and only those are called. Hooks are called
// synchronously, from several goroutines at once (one per partition, and a
// partition's reader and committer), so they must be safe for that.
type Hook any

// StepHook is called at every Step of writing an object. An error aborts
// the run right there, as if the process had died: nothing is released and
// no group is left (crash tests).
type StepHook interface {
	OnStep(step Step, p batch.Partition) error
}

// ObjectHook is called once an object or a gap marker is durably written
// and recorded in the state, before the group's offset is stored.
type ObjectHook interface {
	OnObject(p batch.Partition, o Written)
}

// RunHook is called when a run has ended, with its summary and error
// (metrics, logs).
type RunHook interface {
	OnRunEnd(sum *Summary, err error)
}

// Written describes one object (or gap marker) a run wrote.
type Written struct {
	Key         string
	First, Last uint64
	Messages    uint64 // records in the object; 0 for a gap marker
	Bytes       uint64 // bytes stored
	Gap         bool   // a marker for offsets Iggy deleted before the sink read them, or never had
	Cause       string // why a gap marker's offsets are missing: CauseRetention, CauseIggyHole, CauseRecreated, CauseSkipped
	Existed     bool   // the key already held the object (a repeated write)
	// Values are the keys of a unit's value objects (a path template with
	// payload fields: Key is the unit's manifest), in key order.
	Values []string
}

// Step names a point in writing one object, for crash tests.
type Step string

// The steps of writing one object, in order.
const (
	StepPolled    Step = "after-poll"
	StepIntent    Step = "after-intent"
	StepMidUpload Step = "mid-upload"
	// StepValueWritten follows each value object of a unit split by
	// payload values, before the unit's manifest (ValueSteps).
	StepValueWritten Step = "after-value-object"
	StepUploaded     Step = "after-upload"
	StepStateWritten Step = "after-state-written"
	StepBeforeStore  Step = "before-offset-store"
	StepStored       Step = "after-offset-store"
)

// Steps lists every Step of writing one object, in order.
var Steps = []Step{StepPolled, StepIntent, StepMidUpload, StepUploaded, StepStateWritten, StepBeforeStore, StepStored}

// ValueSteps lists every Step of writing one unit split by payload values
// (a path template with {payload.<path>}), in order.
var ValueSteps = []Step{StepPolled, StepIntent, StepMidUpload, StepValueWritten, StepUploaded, StepStateWritten, StepBeforeStore, StepStored}

type hooks struct {
	steps   []StepHook
	objects []ObjectHook
	runs    []RunHook
}

func newHooks(hs []Hook) hooks {
	var h hooks
	for _, x := range hs {
		if s, ok := x.(StepHook); ok {
			h.steps = append(h.steps, s)
		}
		if o, ok := x.(ObjectHook); ok {
			h.objects = append(h.objects, o)
		}
		if r, ok := x.(RunHook); ok {
			h.runs = append(h.runs, r)
		}
	}
	return h
}
