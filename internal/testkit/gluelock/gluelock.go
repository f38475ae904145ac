// Package gluelock is a loopback proxy in front of moto_server that holds
// Glue's UpdateTable to the VersionId it names, as AWS Glue does and moto does not.
//
// AWS Glue refuses an UpdateTable whose VersionId is not the table's current
// one with ConcurrentModificationException: that is the optimistic lock the
// Iceberg Glue catalog commits with. moto accepts it and overwrites the
// table, so two writers' commits both "succeed" there and the test of a
// conflict proves nothing. Behind this proxy they conflict as on AWS.
package gluelock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy forwards Glue calls to moto and refuses stale UpdateTables.
type Proxy struct {
	// URL is the endpoint to give the Glue client.
	URL string
	// Refused counts the UpdateTables refused as concurrent modifications.
	Refused  atomic.Int64
	upstream string
	mu       sync.Mutex // one UpdateTable checked and applied at a time
}

// Start starts a proxy to the moto_server at upstream (http://host:port),
// stopped when the test ends.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("gluelock: upstream %q: %v", upstream, err)
	}
	p := &Proxy{upstream: upstream}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") != "AWSGlue.UpdateTable" {
			rp.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		defer p.mu.Unlock()
		if msg := p.stale(r, body); msg != "" {
			p.Refused.Add(1)
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			w.Header().Set("X-Amzn-Errortype", "ConcurrentModificationException")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"__type": "ConcurrentModificationException", "Message": msg})
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

type updateTable struct {
	CatalogID    string `json:"CatalogId,omitempty"`
	DatabaseName string
	TableInput   struct{ Name string }
	VersionID    string `json:"VersionId"`
}

// stale says why the update names a version that is not the table's
// current one ("" when it is current, or names none).
func (p *Proxy) stale(r *http.Request, body []byte) string {
	var u updateTable
	if err := json.Unmarshal(body, &u); err != nil || u.VersionID == "" {
		return ""
	}
	q, _ := json.Marshal(map[string]string{"DatabaseName": u.DatabaseName, "Name": u.TableInput.Name})
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.upstream+"/", bytes.NewReader(q))
	if err != nil {
		return ""
	}
	req.Header.Set("X-Amz-Target", "AWSGlue.GetTable")
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("Authorization", r.Header.Get("Authorization"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var got struct {
		Table struct {
			VersionID string `json:"VersionId"`
		}
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&got) != nil {
		return "" // moto answers the update itself (a missing table, ...)
	}
	if got.Table.VersionID != u.VersionID {
		return fmt.Sprintf("table %s.%s is at version %s, the update names version %s", u.DatabaseName, u.TableInput.Name, got.Table.VersionID, u.VersionID)
	}
	return ""
}
