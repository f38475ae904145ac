package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// backend echoes the Host header it saw and counts requests.
func backend(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen-Host", r.Host)
		_, _ = w.Write(append([]byte(r.Method+" "+r.URL.Path+" "), body...))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func startProxy(t *testing.T, target string, c Config) *Proxy {
	t.Helper()
	p, err := Start(target, c)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestForwardsAndKeepsHost(t *testing.T) {
	srv, hits := backend(t)
	p := startProxy(t, srv.URL, Config{})
	resp, err := http.Post(p.URL()+"/bucket/key", "text/plain", strings.NewReader("data"))
	if err != nil {
		t.Fatalf("POST through proxy: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "POST /bucket/key data" {
		t.Fatalf("body = %q", body)
	}
	proxyHost := strings.TrimPrefix(p.URL(), "http://")
	if got := resp.Header.Get("X-Seen-Host"); got != proxyHost {
		t.Fatalf("backend saw Host %q, want the client's %q", got, proxyHost)
	}
	if hits.Load() != 1 {
		t.Fatalf("backend hits = %d", hits.Load())
	}
	if s := p.Stats(); s != (Stats{Requests: 1, Forwarded: 1}) {
		t.Fatalf("stats = %+v", s)
	}
}

func TestInjectedFaults(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantCode  []int
		wantS3    string
		wantErr   bool
		wantStats Stats
		wantHits  int64
	}{
		{name: "error", cfg: Config{ErrorRate: 1}, wantCode: []int{500, 503}, wantS3: "<Code>",
			wantStats: Stats{Requests: 1, Errors: 1}},
		{name: "forbid", cfg: Config{Forbid: true}, wantCode: []int{403}, wantS3: "<Code>AccessDenied</Code>",
			wantStats: Stats{Requests: 1, Forbidden: 1}},
		{name: "reset", cfg: Config{ResetRate: 1}, wantErr: true,
			wantStats: Stats{Requests: 1, Resets: 1}},
		{name: "stall", cfg: Config{StallRate: 1, Stall: 3 * time.Second}, wantErr: true,
			wantStats: Stats{Requests: 1, Stalls: 1, Forwarded: 1}, wantHits: 1},
		{name: "filtered out", cfg: Config{ErrorRate: 1, Only: func(r *http.Request) bool { return r.Method == http.MethodPut }},
			wantCode: []int{200}, wantStats: Stats{Requests: 1, Forwarded: 1}, wantHits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := backend(t)
			p := startProxy(t, srv.URL, tt.cfg)
			client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 200 * time.Millisecond}}
			start := time.Now()
			resp, err := client.Get(p.URL() + "/b/k")
			if tt.wantErr {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("got HTTP %d, want a transport error", resp.StatusCode)
				}
			} else {
				if err != nil {
					t.Fatalf("GET: %v", err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				ok := false
				for _, c := range tt.wantCode {
					ok = ok || resp.StatusCode == c
				}
				if !ok {
					t.Fatalf("status %d, want one of %v", resp.StatusCode, tt.wantCode)
				}
				if !strings.Contains(string(body), tt.wantS3) {
					t.Fatalf("body %q lacks %q", body, tt.wantS3)
				}
			}
			if tt.cfg.Stall > 0 && time.Since(start) >= tt.cfg.Stall {
				t.Fatalf("client waited the whole stall; header timeout not hit")
			}
			// Stall counters are bumped before the reply, reset/error ones too,
			// but the handler may still be running: wait briefly for it.
			deadline := time.Now().Add(2 * time.Second)
			for p.Stats() != tt.wantStats && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if s := p.Stats(); s != tt.wantStats {
				t.Fatalf("stats = %+v, want %+v", s, tt.wantStats)
			}
			if hits.Load() != tt.wantHits {
				t.Fatalf("backend hits = %d, want %d", hits.Load(), tt.wantHits)
			}
		})
	}
}

// outcomes runs n requests and records which fault each one met.
func outcomes(t *testing.T, p *Proxy, n int) string {
	t.Helper()
	var sb strings.Builder
	for i := 0; i < n; i++ {
		before := p.Stats()
		resp, err := http.Get(p.URL() + "/x")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		after := p.Stats()
		switch {
		case after.Errors > before.Errors:
			sb.WriteByte('E')
		case after.Resets > before.Resets:
			sb.WriteByte('R')
		default:
			sb.WriteByte('.')
		}
	}
	return sb.String()
}

func TestSeededRatesAreReproducible(t *testing.T) {
	srv, _ := backend(t)
	cfg := Config{Seed: 42, ErrorRate: 0.2, ResetRate: 0.1}
	a := outcomes(t, startProxy(t, srv.URL, cfg), 400)
	b := outcomes(t, startProxy(t, srv.URL, cfg), 400)
	if a != b {
		t.Fatalf("same seed gave different fault sequences:\n%s\n%s", a, b)
	}
	errs, resets := strings.Count(a, "E"), strings.Count(a, "R")
	// Binomial(400, 0.2): mean 80, sd 8; (400, 0.1): mean 40, sd 6. Allow 4 sd.
	if errs < 48 || errs > 112 || resets < 16 || resets > 64 {
		t.Fatalf("errors %d resets %d of 400; want about 80 and 40", errs, resets)
	}
	c := outcomes(t, startProxy(t, srv.URL, Config{Seed: 43, ErrorRate: 0.2, ResetRate: 0.1}), 400)
	if c == a {
		t.Fatalf("different seeds gave the same sequence")
	}
}

func TestSetHeals(t *testing.T) {
	srv, _ := backend(t)
	p := startProxy(t, srv.URL, Config{Forbid: true})
	get := func() int {
		resp, err := http.Get(p.URL() + "/x")
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusForbidden {
		t.Fatalf("status %d, want 403", code)
	}
	if err := p.Set(Config{}); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("after heal: status %d, want 200", code)
	}
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		name, target string
		cfg          Config
		want         string
	}{
		{"not a URL", "127.0.0.1:1", Config{}, "not an http(s) URL"},
		{"rate above 1", "http://127.0.0.1:1", Config{ErrorRate: 1.5}, "ErrorRate"},
		{"negative rate", "http://127.0.0.1:1", Config{ResetRate: -0.1}, "ResetRate"},
		{"sum above 1", "http://127.0.0.1:1", Config{ErrorRate: 0.6, StallRate: 0.6, Stall: time.Second}, "sum"},
		{"stall without duration", "http://127.0.0.1:1", Config{StallRate: 0.1}, "Stall duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(tt.target, tt.cfg)
			if err == nil {
				p.Close()
				t.Fatalf("Start accepted %+v", tt.cfg)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestCloseEndsStalls(t *testing.T) {
	srv, _ := backend(t)
	p, err := Start(srv.URL, Config{StallRate: 1, Stall: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(p.URL() + "/x")
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for p.Stats().Stalls == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	_ = p.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("stalled request got a reply, want a closed connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stalled request still hanging 5s after Close")
	}
}

// A corrupting proxy forwards the body with exactly its middle byte flipped,
// and leaves bodiless requests alone.
func TestCorruptFlipsOneByte(t *testing.T) {
	srv, _ := backend(t)
	p := startProxy(t, srv.URL, Config{CorruptRate: 1})
	resp, err := http.Post(p.URL()+"/k", "text/plain", strings.NewReader("abcde"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "POST /k ab\x9cde" { // 0x63 ^ 0xff
		t.Fatalf("backend saw %q, want the middle byte of \"abcde\" flipped", body)
	}
	resp, err = http.Get(p.URL() + "/k")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := p.Stats(); s.Corrupted != 1 || s.Forwarded != 2 {
		t.Fatalf("stats = %+v, want 1 corrupted of 2 forwarded", s)
	}
}
