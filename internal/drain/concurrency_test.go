package drain_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
)

// TestConcurrentRuns runs three sinks at once over 8 partitions through the
// same consumer group and state table, round after round.
func TestConcurrentRuns(t *testing.T) {
	eachBackend(t, func(t *testing.T, w *world) {
		// moto_server evaluates conditional writes without a lock, so two
		// racing conditional updates of one item can both succeed; DynamoDB
		// never allows that. Serialising the requests restores DynamoDB's
		// per-item atomicity, which the protocol relies on.
		if w.moto != nil {
			w.dynamoURL = serialProxy(t, w.moto.Endpoint)
		}
		w.produce("conc", 8, 400, 200)
		set := w.settings("conc", "conc")
		set["SINK_FILE_ROTATION"] = "messages"
		set["SINK_MAX_MESSAGES_PER_FILE"] = "50"
		set["SINK_BATCH_LENGTH"] = "30"
		cfg := w.config(set)
		var rec *recordingStore
		sinks := make([]*app.Sink, 3)
		for i := range sinks {
			s := w.sink(cfg, app.Options{})
			if rec == nil {
				rec = newRecordingStore(s.Objects)
			}
			s.Objects = rec
			sinks[i] = s
		}
		for round := 0; round < 30 && !w.allCommitted(sinks[0], "conc"); round++ {
			var wg sync.WaitGroup
			for _, s := range sinks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := s.Run(context.Background()); err != nil {
						t.Logf("round %d: %v", round, err)
					}
				}()
			}
			wg.Wait()
		}
		if !w.allCommitted(sinks[0], "conc") {
			t.Fatal("three concurrent sinks did not drain the topic in 30 rounds")
		}
		w.checkExactlyOnce(sinks[0], "conc", "json_lines")
		w.auditClean(sinks[0])
		if c := rec.conflicting(); len(c) > 0 {
			t.Fatalf("keys written with different contents: %v", c)
		}
	})
}

// serialProxy forwards to target one request at a time.
func serialProxy(t *testing.T, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
