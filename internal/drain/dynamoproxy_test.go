package drain_test

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// dynamoProxy sits in front of a DynamoDB endpoint, counts requests by
// operation, and loses replies: a write (UpdateItem or PutItem) it picks is
// applied but answered with a 500, and the client's retries of it fail
// until the client reads the item back — a write whose every reply was
// lost. It picks the next write after loseNext, and, at setRate's rate, any
// write (half of those lose their reply, half fail without applying).
type dynamoProxy struct {
	url string
	rp  *httputil.ReverseProxy

	mu    sync.Mutex
	ops   map[string]int
	rate  int
	rng   *rand.Rand
	armed bool // lose the next write's reply
	lose  bool // failing the retries of a write that applied
}

func newDynamoProxy(t testing.TB, target string, seed uint64) *dynamoProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &dynamoProxy{rp: httputil.NewSingleHostReverseProxy(u), ops: map[string]int{}, rng: rand.New(rand.NewPCG(seed, 2))}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *dynamoProxy) setRate(percent int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rate, p.lose = percent, false
}

func (p *dynamoProxy) loseNext() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = true
}

// writes counts the state writes: Acquire's UpdateItem and the PutItems
// of the rest.
func (p *dynamoProxy) writes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ops["UpdateItem"] + p.ops["PutItem"]
}

func (p *dynamoProxy) decide(op string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops[op]++
	switch n := p.rng.IntN(100); {
	case op == "GetItem":
		p.lose = false
	case op != "UpdateItem" && op != "PutItem":
	case p.lose:
		return "fail"
	case p.armed || n < p.rate/2:
		p.armed, p.lose = false, true
		return "lose"
	case n < p.rate:
		return "fail"
	}
	return "pass"
}

func (p *dynamoProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := r.Header.Get("X-Amz-Target")
	fail := func() {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"injected"}`)
	}
	switch p.decide(op[strings.LastIndexByte(op, '.')+1:]) {
	case "lose":
		p.rp.ServeHTTP(httptest.NewRecorder(), r)
		fail()
	case "fail":
		fail()
	default:
		p.rp.ServeHTTP(w, r)
	}
}
