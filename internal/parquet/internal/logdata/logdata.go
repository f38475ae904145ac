// Package logdata generates JSON log payloads of about 0.7–1 KiB (nested
// objects, arrays, strings, ints, floats, bools) from a fixed seed, for the
// Parquet benchmarks and the side-by-side comparison with pyarrow.
package logdata

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

var (
	services = []string{"checkout-api", "payments", "search", "inventory", "gateway", "auth"}
	levels   = []string{"debug", "info", "info", "info", "warn", "error"}
	methods  = []string{"GET", "GET", "POST", "PUT", "DELETE"}
	paths    = []string{"/api/v1/orders", "/api/v1/users", "/api/v2/search", "/healthz", "/api/v1/payments", "/api/v1/cart"}
	agents   = []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
		"curl/8.5.0", "okhttp/4.12.0", "python-requests/2.32.3",
	}
	countries = []string{"DE", "FR", "US", "PL", "JP", "BR", "IN"}
	tiers     = []string{"free", "pro", "gold"}
	regions   = []string{"eu-central-1", "us-east-1", "ap-south-1"}
)

// Lines returns n payloads, each one JSON object without a newline.
func Lines(seed uint64, n int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([][]byte, n)
	var b strings.Builder
	for i := range n {
		b.Reset()
		write(&b, r, i)
		out[i] = []byte(b.String())
	}
	return out
}

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

func write(b *strings.Builder, r *rand.Rand, i int) {
	status := []int{200, 200, 200, 201, 204, 400, 404, 500}[r.IntN(8)]
	method, path := pick(r, methods), pick(r, paths)
	id := r.IntN(1_000_000)
	dur := r.Float64() * 250
	fmt.Fprintf(b, `{"ts":"2026-11-30T20:%02d:%02d.%06dZ","level":%q,"service":%q,"host":"ip-10-0-%d-%d",`,
		i/60000%60, i/1000%60, r.IntN(1_000_000), pick(r, levels), pick(r, services), r.IntN(8), r.IntN(250))
	fmt.Fprintf(b, `"trace_id":"%016x%016x","span_id":"%016x",`, r.Uint64(), r.Uint64(), r.Uint64())
	fmt.Fprintf(b, `"msg":"request completed: %s %s/%d returned %d in %.0f ms",`, method, path, id, status, dur)
	fmt.Fprintf(b, `"http":{"method":%q,"path":"%s/%d","status":%d,"bytes":%d,"duration_ms":%.3f,"user_agent":%q},`,
		method, path, id, status, r.IntN(200_000), dur, pick(r, agents))
	fmt.Fprintf(b, `"user":{"id":%d,"tier":%q,"country":%q,"session":"%016x"},`, r.IntN(100_000), pick(r, tiers), pick(r, countries), r.Uint64())
	fmt.Fprintf(b, `"tags":["web",%q`, pick(r, regions))
	if r.IntN(4) == 0 {
		b.WriteString(`,"canary"`)
	}
	fmt.Fprintf(b, `],"metrics":{"cpu":%.4f,"mem_mb":%.1f,"gc_pauses_ms":[%.3f,%.3f],"queue_depth":%d},`,
		r.Float64(), 256+r.Float64()*1024, r.Float64(), r.Float64()*2, r.IntN(64))
	fmt.Fprintf(b, `"retries":%d,"cached":%v,"region":%q,"version":"1.%d.%d","build":"%08x"}`,
		r.IntN(3), r.IntN(3) == 0, pick(r, regions), r.IntN(5), r.IntN(20), r.Uint32())
}
