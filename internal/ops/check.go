package ops

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/app"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/explain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
)

// CheckResult is one line of `poller check`: what was checked, what was
// found, or why it failed.
type CheckResult struct {
	Name   string // "iggy", "topic", "s3 bucket", "s3 write", "state table"
	Detail string // what was found (success) or what was not checked (skip)
	Err    error  // the failure, already explained
	Skip   bool   // not checked because an earlier check failed
	Warn   bool   // works, but Detail says what to fix; not a failure
}

// String is the line `poller check` prints.
func (r CheckResult) String() string {
	switch {
	case r.Err != nil:
		return fmt.Sprintf("FAIL  %-12s %v", r.Name, r.Err)
	case r.Skip:
		return fmt.Sprintf("skip  %-12s %s", r.Name, r.Detail)
	case r.Warn:
		return fmt.Sprintf("warn  %-12s %s", r.Name, r.Detail)
	default:
		return fmt.Sprintf("ok    %-12s %s", r.Name, r.Detail)
	}
}

// CheckError is returned by Check: the first check that failed.
type CheckError struct{ First CheckResult }

func (e *CheckError) Error() string { return e.First.Name + ": " + e.First.Err.Error() }
func (e *CheckError) Unwrap() error { return e.First.Err }

// Checker runs the start-up checks: what a deployment needs of Iggy, S3
// and the state table, each failure told as the setting to fix.
type Checker struct {
	Config  *config.Config
	Objects any // probed when it is S3
	State   any // checked when it is DynamoDB
	Open    func(ctx context.Context) (*source.Conn, error)
	Explain *explain.Explainer
}

// NewChecker checks s.
func NewChecker(s *app.Sink) *Checker {
	return &Checker{Config: s.Config, Objects: s.Objects, State: s.State, Open: s.OpenIggy, Explain: s.Explainer()}
}

// checkTimeout bounds each group of checks (Iggy, S3, the table), so that
// a black-holed endpoint fails the check instead of hanging it.
const checkTimeout = 30 * time.Second

// prober is what the checks need of the object store (*s3store.Uploader).
type prober interface {
	ProbeList(ctx context.Context, prefix string) error
	ProbeWrite(ctx context.Context, key string) error
}

// tableChecker is what the checks need of the state store (*state.Dynamo).
type tableChecker interface {
	Check(ctx context.Context) error
}

// Check runs every start-up check, calling report with each result in
// order: Iggy reachable and logged in; each configured stream and topic
// present; the bucket reachable; writes allowed under the prefix; the state
// table present. A check that depends on a failed one is skipped. Nothing is
// created or written. The error is a *CheckError naming the first failure.
func (s *Checker) Check(ctx context.Context, report func(CheckResult)) error {
	var first *CheckResult
	emit := func(r CheckResult) {
		if r.Err != nil && first == nil {
			first = &r
		}
		report(r)
	}
	for _, r := range s.checkIggy(ctx) {
		emit(r)
	}
	s3 := s.checkS3(ctx)
	for _, r := range s3 {
		emit(r)
	}
	if len(s3) > 0 && s3[0].Err == nil && !s3[0].Skip {
		emit(s.checkAbortRule(ctx))
	}
	emit(s.checkTable(ctx))
	if first != nil {
		return &CheckError{First: *first}
	}
	return nil
}

// abortRuler is what the lifecycle check needs of the object store
// (*s3store.Uploader).
type abortRuler interface {
	AbortRule(ctx context.Context, prefix string) (id string, days int32, found bool, err error)
}

// checkAbortRule looks for the bucket lifecycle rule that removes what a
// killed run leaves of a multipart upload (the run that recovers the object
// aborts it too, but a partition never run again keeps it). Its absence is
// a warning, not a failure: only `poller check` reads the rules, and the
// function's role may not.
func (s *Checker) checkAbortRule(ctx context.Context) CheckResult {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	const name = "s3 lifecycle"
	r, ok := s.Objects.(abortRuler)
	if !ok {
		return CheckResult{Name: name, Skip: true, Detail: "not checked: the object store is not S3"}
	}
	prefix := strings.Trim(s.Config.Plugin.Prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	id, days, found, err := r.AbortRule(ctx, prefix)
	switch {
	case err != nil:
		code, _ := explain.APICode(err)
		return CheckResult{Name: name, Warn: true, Detail: fmt.Sprintf("could not read the bucket's lifecycle rules (%s; needs s3:GetLifecycleConfiguration): make sure one aborts incomplete multipart uploads", cmp.Or(code, "error"))}
	case !found:
		return CheckResult{Name: name, Warn: true, Detail: fmt.Sprintf("no rule of bucket %q aborts incomplete multipart uploads under %q: a run killed mid-upload leaves its parts, billed, until one does (the template's CreateBucket=true adds one; or add AbortIncompleteMultipartUpload, e.g. after 1 day)", s.Config.Plugin.Bucket, prefix)}
	}
	return CheckResult{Name: name, Detail: fmt.Sprintf("rule %q aborts incomplete multipart uploads after %d day(s)", id, days)}
}

// Preflight runs the checks a run makes before it drains anything: S3 and
// the state table (the run's own connection checks Iggy, stream and topics
// first thing). A misconfigured bucket so fails the run at its start rather
// than when the first object is due.
func (s *Checker) Preflight(ctx context.Context) error {
	for _, r := range append(s.checkS3(ctx), s.checkTable(ctx)) {
		if r.Err != nil {
			return &CheckError{First: r}
		}
	}
	return nil
}

// Write runs Check and prints one line per check to w.
func (s *Checker) Write(ctx context.Context, w io.Writer) error {
	return s.Check(ctx, func(r CheckResult) { fmt.Fprintln(w, r) })
}

func (s *Checker) checkIggy(ctx context.Context) []CheckResult {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	who := fmt.Sprintf("user %q", s.Config.Iggy.Username)
	if s.Explain.Token {
		who = "a personal access token"
	}
	conn, err := s.Open(ctx)
	if err != nil {
		out := []CheckResult{{Name: "iggy", Err: err}}
		for _, st := range s.Config.Streams {
			for _, t := range st.Topics {
				out = append(out, CheckResult{Name: "topic", Skip: true, Detail: st.Stream + "/" + t + ": not checked (no Iggy connection)"})
			}
		}
		return out
	}
	defer conn.Close()
	out := []CheckResult{{Name: "iggy", Detail: fmt.Sprintf("%s speaks %s; logged in to %s as %s", s.Config.Iggy.Address, conn.Speaks(), s.Config.Iggy.Address, who)}}
	for _, st := range s.Config.Streams {
		for _, name := range st.Topics {
			t, err := conn.Topic(ctx, st.Stream, name, st.ConsumerGroup)
			if err != nil {
				out = append(out, CheckResult{Name: "topic", Err: fmt.Errorf("%w (the sink never creates streams or topics)", err)})
				continue
			}
			var msgs uint64
			for _, p := range t.Partitions {
				msgs += p.MessagesCount
			}
			out = append(out, CheckResult{Name: "topic", Detail: fmt.Sprintf("%s/%s: %d partitions, %d messages", st.Stream, name, len(t.Partitions), msgs)})
		}
	}
	return out
}

func (s *Checker) checkS3(ctx context.Context) []CheckResult {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	p, ok := s.Objects.(prober)
	if !ok {
		return []CheckResult{{Name: "s3", Skip: true, Detail: "not checked: the object store is not S3"}}
	}
	bucket, where := s.Config.Plugin.Bucket, s.Explain.S3Where()
	prefix := strings.Trim(s.Config.Plugin.Prefix, "/")
	listPrefix, probeKey := "", s3store.ProbeKeyName
	if prefix != "" {
		listPrefix, probeKey = prefix+"/", prefix+"/"+s3store.ProbeKeyName
	}
	var out []CheckResult
	if err := p.ProbeList(ctx, listPrefix); err != nil {
		out = append(out, CheckResult{Name: "s3 bucket", Err: s.Explain.S3("list", err)})
	} else {
		out = append(out, CheckResult{Name: "s3 bucket", Detail: fmt.Sprintf("s3://%s/%s can be listed (%s)", bucket, listPrefix, where)})
	}
	if err := p.ProbeWrite(ctx, probeKey); err != nil {
		out = append(out, CheckResult{Name: "s3 write", Err: s.Explain.S3("write", err)})
	} else {
		out = append(out, CheckResult{Name: "s3 write", Detail: fmt.Sprintf("may write under s3://%s/%s (a multipart upload started and aborted; nothing written)", bucket, listPrefix)})
	}
	// Error objects outside the prefix need their own permission.
	if ep := s.Config.Plugin.ErrorsPrefix(); s.Config.Plugin.ErrorObjects() && !strings.HasPrefix(ep+"/", listPrefix) {
		if err := p.ProbeWrite(ctx, ep+"/"+s3store.ProbeKeyName); err != nil {
			out = append(out, CheckResult{Name: "s3 write errors", Err: s.Explain.S3("write", err)})
		} else {
			out = append(out, CheckResult{Name: "s3 write errors", Detail: fmt.Sprintf("may write error objects under s3://%s/%s/", bucket, ep)})
		}
	}
	return out
}

func (s *Checker) checkTable(ctx context.Context) CheckResult {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	tc, ok := s.State.(tableChecker)
	if !ok {
		return CheckResult{Name: "state table", Skip: true, Detail: "not checked: the state store is not DynamoDB"}
	}
	table := s.Config.Plugin.StateTable
	if err := tc.Check(ctx); err != nil {
		return CheckResult{Name: "state table", Err: s.Explain.Dynamo(ctx, table, err)}
	}
	return CheckResult{Name: "state table", Detail: fmt.Sprintf("%q exists (%s)", table, s.Explain.DynamoWhere())}
}
