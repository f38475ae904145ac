package parquet

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// genRecords makes n log-like records from a fixed seed: a stable core of
// fields (strings, ints, floats, bools, a nested object, an array of
// objects) plus, now and then, type conflicts, nulls, escapes, non-ASCII
// text, big integers, duplicate and case-clashing member names, non-object
// and invalid payloads, and headers in any order.
func genRecords(seed uint64, n int) []oracleRecord {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	levels := []string{"debug", "info", "warn", "error"}
	out := make([]oracleRecord, 0, n)
	for i := range n {
		rec := oracleRecord{offset: uint64(1000 + i), timestamp: 1_700_000_000_000_000 + uint64(i)*1337}
		switch r.IntN(8) {
		case 0:
			rec.headers = []Header{{Key: []byte("trace"), Value: []byte(strconv.Itoa(r.IntN(50)))}, {Key: []byte("app"), Value: []byte("api")}}
		case 1:
			rec.headers = []Header{{Key: []byte("k"), Value: []byte("1")}, {Key: []byte("k"), Value: []byte("2")}}
		case 2:
			rec.headers = []Header{}
		}
		rec.payload = []byte(genPayload(r, i, levels))
		out = append(out, rec)
	}
	return out
}

func genPayload(r *rand.Rand, i int, levels []string) string {
	switch r.IntN(200) {
	case 0:
		return `[1,"two",{"three":3}]`
	case 1:
		return `"just a string"`
	case 2:
		return `{"level":"info","broken":`
	case 3:
		return "{\"level\":\"bad \xff utf8\"}"
	case 4:
		return ` null `
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"level":%q,"msg":"request %d served in %d ms","status":%d,"latency":%.3f`,
		levels[r.IntN(len(levels))], i, r.IntN(900), 200+r.IntN(4)*100, r.Float64()*100)
	fmt.Fprintf(&b, `,"ctx":{"user":"u%d","region":%q,"retries":%d,"auth":{"ok":%v,"method":"jwt"}}`,
		r.IntN(300), []string{"eu", "us", "ap"}[r.IntN(3)], r.IntN(3), r.IntN(2) == 0)
	b.WriteString(`,"spans":[`)
	for k := range r.IntN(4) {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"s%d","dur":%d,"tags":["a","b%d"]}`, k, r.IntN(1000), r.IntN(5))
	}
	b.WriteByte(']')
	switch r.IntN(12) {
	case 0:
		b.WriteString(`,"mixed":"text"`)
	case 1:
		b.WriteString(`,"mixed":42`)
	case 2:
		b.WriteString(`,"mixed":{"deep":[1,2]}`)
	case 3:
		b.WriteString(`,"num":1`)
	case 4:
		b.WriteString(`,"num":2.5,"big":18446744073709551616`)
	case 5:
		b.WriteString(`,"esc":"tab\there \"quoted\" \u00e9\ud83d\ude00 \ud800 end","Level":"CASE"`)
	case 6:
		b.WriteString(`,"nothing":null,"empty_obj":{},"empty_arr":[],"nested_null":{"a":null}`)
	case 7:
		b.WriteString(`,"dup":1,"dup":2,"":"empty key","payload":"field named payload"`)
	case 8:
		b.WriteString(`,"timestamp":"2024-01-01T00:00:00Z","offset":-1`)
	case 9:
		b.WriteString(` , "spaced" : [ 1 , null , 3 ] , "matrix":[[1,2],[],[3]]`)
	case 10:
		b.WriteString(`,"flag":true,"ratio":-0.0,"huge":1e308,"tiny":5e-324`)
	}
	b.WriteByte('}')
	return b.String()
}
