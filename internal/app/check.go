package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/editdist"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/redact"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
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
func (s *Sink) Check(ctx context.Context, report func(CheckResult)) error {
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
func (s *Sink) checkAbortRule(ctx context.Context) CheckResult {
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
		code, _ := apiCode(err)
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
func (s *Sink) Preflight(ctx context.Context) error {
	for _, r := range append(s.checkS3(ctx), s.checkTable(ctx)) {
		if r.Err != nil {
			return &CheckError{First: r}
		}
	}
	return nil
}

// WriteCheck runs Check and prints one line per check to w.
func (s *Sink) WriteCheck(ctx context.Context, w io.Writer) error {
	return s.Check(ctx, func(r CheckResult) { fmt.Fprintln(w, r) })
}

func (s *Sink) checkIggy(ctx context.Context) []CheckResult {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	who := fmt.Sprintf("user %q", s.iggy.Username)
	if s.iggy.Token != "" {
		who = "a personal access token"
	}
	conn, err := s.openIggy(ctx)
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
	out := []CheckResult{{Name: "iggy", Detail: fmt.Sprintf("%s speaks %s; logged in to %s as %s", s.iggy.Address, conn.Speaks(), s.iggy.Address, who)}}
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

func (s *Sink) checkS3(ctx context.Context) []CheckResult {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	p, ok := s.Objects.(prober)
	if !ok {
		return []CheckResult{{Name: "s3", Skip: true, Detail: "not checked: the object store is not S3"}}
	}
	bucket, where := s.Config.Plugin.Bucket, s.s3Where()
	prefix := strings.Trim(s.Config.Plugin.Prefix, "/")
	listPrefix, probeKey := "", s3store.ProbeKeyName
	if prefix != "" {
		listPrefix, probeKey = prefix+"/", prefix+"/"+s3store.ProbeKeyName
	}
	var out []CheckResult
	if err := p.ProbeList(ctx, listPrefix); err != nil {
		out = append(out, CheckResult{Name: "s3 bucket", Err: s.explainS3("list", err)})
	} else {
		out = append(out, CheckResult{Name: "s3 bucket", Detail: fmt.Sprintf("s3://%s/%s can be listed (%s)", bucket, listPrefix, where)})
	}
	if err := p.ProbeWrite(ctx, probeKey); err != nil {
		out = append(out, CheckResult{Name: "s3 write", Err: s.explainS3("write", err)})
	} else {
		out = append(out, CheckResult{Name: "s3 write", Detail: fmt.Sprintf("may write under s3://%s/%s (a multipart upload started and aborted; nothing written)", bucket, listPrefix)})
	}
	// Error objects outside the prefix need their own permission.
	if ep := s.Config.Plugin.ErrorsPrefix(); s.Config.Plugin.ErrorObjects() && !strings.HasPrefix(ep+"/", listPrefix) {
		if err := p.ProbeWrite(ctx, ep+"/"+s3store.ProbeKeyName); err != nil {
			out = append(out, CheckResult{Name: "s3 write errors", Err: s.explainS3("write", err)})
		} else {
			out = append(out, CheckResult{Name: "s3 write errors", Detail: fmt.Sprintf("may write error objects under s3://%s/%s/", bucket, ep)})
		}
	}
	return out
}

func (s *Sink) checkTable(ctx context.Context) CheckResult {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	tc, ok := s.State.(tableChecker)
	if !ok {
		return CheckResult{Name: "state table", Skip: true, Detail: "not checked: the state store is not DynamoDB"}
	}
	table := s.Config.Plugin.StateTable
	if err := tc.Check(ctx); err != nil {
		return CheckResult{Name: "state table", Err: s.explainDynamo(ctx, table, err)}
	}
	return CheckResult{Name: "state table", Detail: fmt.Sprintf("%q exists (%s)", table, s.dynamoWhere())}
}

// s3Where says which S3 the sink talks to, for messages.
func (s *Sink) s3Where() string {
	if e := s.Config.Plugin.Endpoint; e != "" {
		return "endpoint " + redact.URL(e)
	}
	if e := os.Getenv("AWS_ENDPOINT_URL_S3"); e != "" {
		return "endpoint " + redact.URL(e) + " (AWS_ENDPOINT_URL_S3)"
	}
	return "AWS S3, region " + s.Config.Plugin.Region
}

// dynamoWhere says which DynamoDB the sink talks to, for messages: the
// endpoint the client resolved (from AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL or the shared configuration), else AWS's by region.
func (s *Sink) dynamoWhere() string {
	e := s.ddbEndpoint
	if e == "" {
		return "AWS DynamoDB, region " + s.Config.ServicesRegion
	}
	where := "endpoint " + redact.URL(e)
	for _, v := range []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"} {
		if os.Getenv(v) == e {
			return where + " (" + v + ")"
		}
	}
	return where
}

// awsDomains are the domains of AWS's own endpoints, in every partition:
// aws, China, the dual-stack api.aws, GovCloud (amazonaws.com too), the
// ISO partitions and the EU sovereign cloud.
var awsDomains = []string{"amazonaws.com", "amazonaws.com.cn", "api.aws", "c2s.ic.gov", "sc2s.sgov.gov", "cloud.adc-e.uk", "csp.hci.ic.gov", "amazonaws.eu"}

// isAWSEndpoint says whether a DynamoDB endpoint is AWS's own: none set
// (the SDK's, by region), or a host under one of AWS's domains (a FIPS or
// VPC endpoint too). Anything else, such as moto or DynamoDB Local on
// 127.0.0.1 or a container's name, is a local stand-in. An endpoint that
// cannot be read counts as AWS: the safe side, where nothing is created.
func isAWSEndpoint(endpoint string) bool {
	if endpoint == "" {
		return true
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return true
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, d := range awsDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// tableLister is what naming similar tables needs of the state store
// (*state.Dynamo).
type tableLister interface {
	ListTables(ctx context.Context, limit int) ([]string, error)
}

// listLimit bounds the table names read to suggest similar ones (ten
// pages of ListTables).
const listLimit = 1000

// similarTables names the tables whose names are like table, for the
// poller only (PollerTables): the function's role may not list tables. A
// listing that fails (denied, say) leaves the names out.
func (s *Sink) similarTables(ctx context.Context, table string) []string {
	l, ok := s.State.(tableLister)
	if !s.opts.PollerTables || !ok {
		return nil
	}
	names, err := l.ListTables(ctx, listLimit)
	if err != nil {
		s.log.Debug("could not list the DynamoDB tables to name those like the missing state table", "error", err.Error())
		return nil
	}
	return similarNames(table, names, 3)
}

// similarNames returns up to n of names that are like name: within a few
// edits of it (a third of its length, at least 2), or holding it (a
// stack's generated table name holds what a user remembers of it),
// closest first. Case is ignored.
func similarNames(name string, names []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	lname := strings.ToLower(name)
	var cs []cand
	for _, c := range names {
		lc := strings.ToLower(c)
		if c == name {
			continue
		}
		d := editdist.Distance(lname, lc)
		contains := len(lname) >= 3 && strings.Contains(lc, lname)
		if d <= max(2, len(name)/3) || contains {
			cs = append(cs, cand{c, d})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.name, b.name)) })
	out := make([]string, 0, min(n, len(cs)))
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}

// secretFields says what the Secrets Manager secret supplied to the
// Iggy login (see loadSecret).
type secretFields struct {
	id                        string // iggy.credentials_secret, when it was read
	username, password, token bool
}

// openIggy connects and logs in to Iggy; a refused login names the
// settings that hold the credentials.
func (s *Sink) openIggy(ctx context.Context) (*source.Conn, error) {
	conn, err := source.Open(ctx, s.iggy)
	if err != nil {
		return nil, s.explainIggy(err)
	}
	return conn, nil
}

// explainIggy adds to a refused login where its credentials came from:
// the settings, or the secret that held them (never their values).
func (s *Sink) explainIggy(err error) error {
	if !errors.Is(err, source.ErrLoginRefused) {
		return err
	}
	return &explained{msg: err.Error() + ": " + s.credentialsFix(), err: err}
}

// credentialsFix says which settings to fix after a refused login.
func (s *Sink) credentialsFix() string {
	sec := s.secretGave
	secret := fmt.Sprintf("Secrets Manager secret %q (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET)", sec.id)
	if s.iggy.Token != "" { // a token wins over a user name and password
		if sec.token {
			return `fix the personal access token, "token" in ` + secret
		}
		return "fix the personal access token, iggy.token (IGGY_TOKEN)"
	}
	switch {
	case sec.username && sec.password:
		return `fix "username" and "password" in ` + secret
	case sec.password:
		return "fix the password in " + secret + ", or iggy.username (IGGY_USERNAME)"
	case sec.username:
		return `fix "username" in ` + secret + ", or iggy.password (IGGY_PASSWORD)"
	}
	return "fix iggy.username / iggy.password (IGGY_USERNAME / IGGY_PASSWORD)"
}

// explainS3 turns an S3 failure into what to fix. The SDK's own text is
// kept short: a failed request's full error repeats itself.
func (s *Sink) explainS3(op string, err error) error {
	bucket := s.Config.Plugin.Bucket
	code, status := apiCode(err)
	var why string
	switch {
	case code == "NoSuchBucket" || (status == 404 && op == "list" && code == ""):
		why = fmt.Sprintf("bucket %q does not exist at %s: create it, or fix plugin_config.bucket (SINK_BUCKET)", bucket, s.s3Where())
	case code == "InvalidAccessKeyId" || code == "XAdminUserNotFound": // the latter: versitygw
		why = "the server does not know the access key id: check plugin_config.access_key_id (SINK_ACCESS_KEY_ID) or AWS_ACCESS_KEY_ID"
	case code == "SignatureDoesNotMatch":
		why = "the secret access key is wrong: check plugin_config.secret_access_key (SINK_SECRET_ACCESS_KEY) or AWS_SECRET_ACCESS_KEY"
	case code == "AccessDenied" || status == 403:
		what := "s3:ListBucket on arn:aws:s3:::" + bucket + " for the prefix"
		if op == "write" {
			what = "s3:PutObject on arn:aws:s3:::" + bucket + "/" + s.Config.Plugin.Prefix + "*"
		}
		why = "access denied: the credentials need " + what
	case code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" || status == 301:
		why = fmt.Sprintf("bucket %q is not in region %q: set plugin_config.region (SINK_REGION) to the bucket's region", bucket, s.Config.Plugin.Region)
	case isCredentialsError(err):
		why = "no AWS credentials: set plugin_config.access_key_id and secret_access_key (SINK_ACCESS_KEY_ID, SINK_SECRET_ACCESS_KEY), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile or a role"
	case isNetError(err):
		why = fmt.Sprintf("no S3 server answers at %s", s.s3Where())
	default:
		return fmt.Errorf("s3://%s: %w", bucket, err)
	}
	return &explained{msg: why + " (" + shortCause(err, code, status) + ")", err: err}
}

// explainDynamo turns a state-table failure into what to fix.
func (s *Sink) explainDynamo(ctx context.Context, table string, err error) error {
	code, status := apiCode(err)
	var why string
	switch {
	case errors.Is(err, state.ErrTableMissing):
		why = s.missingTable(ctx, table)
	case isCredentialsError(err):
		why = "DynamoDB needs AWS credentials (plugin_config.access_key_id is for S3 only): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile or a role"
	case code == "UnrecognizedClientException" || code == "InvalidSignatureException":
		why = "DynamoDB rejected the AWS credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
	case code == "AccessDeniedException" || status == 403:
		why = fmt.Sprintf("access denied: the credentials need dynamodb:DescribeTable, GetItem, PutItem and UpdateItem on table %q", table)
	case isNetError(err):
		why = fmt.Sprintf("no DynamoDB answers at %s", s.dynamoWhere())
	default:
		return err
	}
	return &explained{msg: why + " (" + shortCause(err, code, status) + ")", err: err}
}

// missingTable says that the state table is missing, where, which tables
// of similar names are there (the poller), and what to do: the poller
// may create it, the Lambda never.
func (s *Sink) missingTable(ctx context.Context, table string) string {
	why := fmt.Sprintf("table %q does not exist at %s", table, s.dynamoWhere())
	if similar := s.similarTables(ctx, table); len(similar) > 0 {
		q := make([]string, len(similar))
		for i, n := range similar {
			q[i] = strconv.Quote(n)
		}
		why += " (tables of similar names there: " + strings.Join(q, ", ") + ")"
	}
	switch {
	case !s.opts.PollerTables:
		return why + ": deploy the template (it creates the table) or fix plugin_config.state_table (SINK_STATE_TABLE)"
	case isAWSEndpoint(s.ddbEndpoint):
		return why + ": deploy the template (it creates the table), fix plugin_config.state_table (SINK_STATE_TABLE), or pass -create-table to poller once or run to create it"
	}
	return why + ": fix plugin_config.state_table (SINK_STATE_TABLE), or let poller once or run create it (they do at an endpoint off AWS such as this one)"
}

// explained is a failure told as what to fix; the SDK's error, which can
// run to kilobytes, stays reachable with errors.Is/As but out of the text.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

func apiCode(err error) (code string, status int) {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	var s3err *s3store.Error
	if errors.As(err, &s3err) {
		status = s3err.Status
	}
	var re interface{ HTTPStatusCode() int }
	if status == 0 && errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}

func shortCause(err error, code string, status int) string {
	switch {
	case code != "" && status != 0:
		return fmt.Sprintf("HTTP %d %s", status, code)
	case code != "":
		return code
	case status != 0:
		return fmt.Sprintf("HTTP %d", status)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && len(msg)-i < 200 {
		return msg[i+2:]
	}
	return msg
}

func isCredentialsError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "get credentials") || strings.Contains(msg, "failed to refresh cached credentials") ||
		strings.Contains(msg, "no EC2 IMDS role found") || strings.Contains(msg, "failed to retrieve credentials")
}

func isNetError(err error) bool {
	var oe *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &oe) || errors.As(err, &dnsErr)
}
