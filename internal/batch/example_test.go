package batch_test

import (
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
)

// The drain's loop: add messages until the object is full, write it, and
// start the next object with the message that did not fit.
func ExampleAccumulator() {
	p := batch.Partition{Stream: "app_logs", Topic: "api_requests", ID: 1}
	enc, err := batch.NewEncoder(p, batch.Options{Format: "json_array", Schema: "json"})
	if err != nil {
		panic(err)
	}
	// Two records make exactly 41 bytes: [{"payload":{"n":0}},{"payload":{"n":1}}]
	acc := batch.NewAccumulator(enc, batch.Rotation{MaxBytes: 41}, 1<<20)
	flush := func() {
		fmt.Printf("%d-%d %s\n", acc.First(), acc.Last(), acc.Bytes())
		acc.Reset()
	}
	for off := uint64(0); off < 5; off++ {
		m := &batch.Message{Offset: off, Payload: fmt.Appendf(nil, `{"n": %d}`, off)}
		ok, err := acc.Add(m)
		if err != nil {
			panic(err)
		}
		if !ok {
			flush()
			if _, err := acc.Add(m); err != nil {
				panic(err)
			}
		}
		if acc.Full() {
			flush()
		}
	}
	if acc.Len() > 0 {
		flush()
	}
	// Output:
	// 0-1 [{"payload":{"n":0}},{"payload":{"n":1}}]
	// 2-3 [{"payload":{"n":2}},{"payload":{"n":3}}]
	// 4-4 [{"payload":{"n":4}}]
}
