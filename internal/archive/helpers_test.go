package archive

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
)

// sameJSON compares two JSON texts as values (member order aside).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }
