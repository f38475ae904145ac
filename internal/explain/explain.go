package explain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/editdist"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/redact"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/source"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/state"
)

// Explainer knows where the sink's services are and where each setting
// came from, to say which one to fix.
type Explainer struct {
	Plugin         *config.Plugin
	ServicesRegion string // where DynamoDB is, when DynamoEndpoint is ""
	DynamoEndpoint string // the endpoint the DynamoDB client resolved ("" for AWS's own)
	// PollerTables is the poller's way with a missing state table (see
	// app.Options): the message then names -create-table, and Tables
	// lists the tables of similar names.
	PollerTables bool
	Tables       TableLister // nil: none listed
	// Token says the Iggy login uses a personal access token; Secret what
	// the credentials secret supplied.
	Token  bool
	Secret SecretFields
	Log    *slog.Logger
}

// S3Where says which S3 the sink talks to, for messages.
func (e *Explainer) S3Where() string {
	if ep := e.Plugin.Endpoint; ep != "" {
		return "endpoint " + redact.URL(ep)
	}
	if ep := os.Getenv("AWS_ENDPOINT_URL_S3"); ep != "" {
		return "endpoint " + redact.URL(ep) + " (AWS_ENDPOINT_URL_S3)"
	}
	return "AWS S3, region " + e.Plugin.Region
}

// DynamoWhere says which DynamoDB the sink talks to, for messages: the
// endpoint the client resolved (from AWS_ENDPOINT_URL_DYNAMODB,
// AWS_ENDPOINT_URL or the shared configuration), else AWS's by region.
func (e *Explainer) DynamoWhere() string {
	ep := e.DynamoEndpoint
	if ep == "" {
		return "AWS DynamoDB, region " + e.ServicesRegion
	}
	where := "endpoint " + redact.URL(ep)
	for _, v := range []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"} {
		if os.Getenv(v) == ep {
			return where + " (" + v + ")"
		}
	}
	return where
}

// awsDomains are the domains of AWS's own endpoints, in every partition:
// aws, China, the dual-stack api.aws, GovCloud (amazonaws.com too), the
// ISO partitions and the EU sovereign cloud.
var awsDomains = []string{"amazonaws.com", "amazonaws.com.cn", "api.aws", "c2s.ic.gov", "sc2s.sgov.gov", "cloud.adc-e.uk", "csp.hci.ic.gov", "amazonaws.eu"}

// IsAWSEndpoint says whether a DynamoDB endpoint is AWS's own: none set
// (the SDK's, by region), or a host under one of AWS's domains (a FIPS or
// VPC endpoint too). Anything else, such as moto or DynamoDB Local on
// 127.0.0.1 or a container's name, is a local stand-in. An endpoint that
// cannot be read counts as AWS: the safe side, where nothing is created.
func IsAWSEndpoint(endpoint string) bool {
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

// TableLister is what naming similar tables needs of the state store
// (*state.Dynamo).
type TableLister interface {
	ListTables(ctx context.Context, limit int) ([]string, error)
}

// listLimit bounds the table names read to suggest similar ones (ten
// pages of ListTables).
const listLimit = 1000

// similarTables names the tables whose names are like table, for the
// poller only (PollerTables): the function's role may not list tables. A
// listing that fails (denied, say) leaves the names out.
func (e *Explainer) similarTables(ctx context.Context, table string) []string {
	l := e.Tables
	if !e.PollerTables || l == nil {
		return nil
	}
	names, err := l.ListTables(ctx, listLimit)
	if err != nil {
		e.Log.Debug("could not list the DynamoDB tables to name those like the missing state table", "error", err.Error())
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

// SecretFields says what the Secrets Manager secret supplied to the
// Iggy login (see loadSecret).
type SecretFields struct {
	ID                        string // iggy.credentials_secret, when it was read
	Username, Password, Token bool
}

// Iggy adds to a refused login where its credentials came from:
// the settings, or the secret that held them (never their values).
func (e *Explainer) Iggy(err error) error {
	if !errors.Is(err, source.ErrLoginRefused) {
		return err
	}
	return &explained{msg: err.Error() + ": " + e.credentialsFix(), err: err}
}

// credentialsFix says which settings to fix after a refused login.
func (e *Explainer) credentialsFix() string {
	sec := e.Secret
	secret := fmt.Sprintf("Secrets Manager secret %q (iggy.credentials_secret / IGGY_CREDENTIALS_SECRET)", sec.ID)
	if e.Token { // a token wins over a user name and password
		if sec.Token {
			return `fix the personal access token, "token" in ` + secret
		}
		return "fix the personal access token, iggy.token (IGGY_TOKEN)"
	}
	switch {
	case sec.Username && sec.Password:
		return `fix "username" and "password" in ` + secret
	case sec.Password:
		return "fix the password in " + secret + ", or iggy.username (IGGY_USERNAME)"
	case sec.Username:
		return `fix "username" in ` + secret + ", or iggy.password (IGGY_PASSWORD)"
	}
	return "fix iggy.username / iggy.password (IGGY_USERNAME / IGGY_PASSWORD)"
}

// S3 turns an S3 failure into what to fix. The SDK's own text is
// kept short: a failed request's full error repeats itself.
func (e *Explainer) S3(op string, err error) error {
	bucket := e.Plugin.Bucket
	code, status := APICode(err)
	var why string
	switch {
	case code == "NoSuchBucket" || (status == 404 && op == "list" && code == ""):
		why = fmt.Sprintf("bucket %q does not exist at %s: create it, or fix plugin_config.bucket (SINK_BUCKET)", bucket, e.S3Where())
	case code == "InvalidAccessKeyId" || code == "XAdminUserNotFound": // the latter: versitygw
		why = "the server does not know the access key id: check plugin_config.access_key_id (SINK_ACCESS_KEY_ID) or AWS_ACCESS_KEY_ID"
	case code == "SignatureDoesNotMatch":
		why = "the secret access key is wrong: check plugin_config.secret_access_key (SINK_SECRET_ACCESS_KEY) or AWS_SECRET_ACCESS_KEY"
	case code == "AccessDenied" || status == 403:
		what := "s3:ListBucket on arn:aws:s3:::" + bucket + " for the prefix"
		if op == "write" {
			what = "s3:PutObject on arn:aws:s3:::" + bucket + "/" + e.Plugin.Prefix + "*"
		}
		why = "access denied: the credentials need " + what
	case code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" || status == 301:
		why = fmt.Sprintf("bucket %q is not in region %q: set plugin_config.region (SINK_REGION) to the bucket's region", bucket, e.Plugin.Region)
	case isCredentialsError(err):
		why = "no AWS credentials: set plugin_config.access_key_id and secret_access_key (SINK_ACCESS_KEY_ID, SINK_SECRET_ACCESS_KEY), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile or a role"
	case isNetError(err):
		why = fmt.Sprintf("no S3 server answers at %s", e.S3Where())
	default:
		return fmt.Errorf("s3://%s: %w", bucket, err)
	}
	return &explained{msg: why + " (" + shortCause(err, code, status) + ")", err: err}
}

// Dynamo turns a state-table failure into what to fix.
func (e *Explainer) Dynamo(ctx context.Context, table string, err error) error {
	code, status := APICode(err)
	var why string
	switch {
	case errors.Is(err, state.ErrTableMissing):
		why = e.missingTable(ctx, table)
	case isCredentialsError(err):
		why = "DynamoDB needs AWS credentials (plugin_config.access_key_id is for S3 only): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile or a role"
	case code == "UnrecognizedClientException" || code == "InvalidSignatureException":
		why = "DynamoDB rejected the AWS credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)"
	case code == "AccessDeniedException" || status == 403:
		why = fmt.Sprintf("access denied: the credentials need dynamodb:DescribeTable, GetItem, PutItem and UpdateItem on table %q", table)
	case isNetError(err):
		why = fmt.Sprintf("no DynamoDB answers at %s", e.DynamoWhere())
	default:
		return err
	}
	return &explained{msg: why + " (" + shortCause(err, code, status) + ")", err: err}
}

// missingTable says that the state table is missing, where, which tables
// of similar names are there (the poller), and what to do: the poller
// may create it, the Lambda never.
func (e *Explainer) missingTable(ctx context.Context, table string) string {
	why := fmt.Sprintf("table %q does not exist at %s", table, e.DynamoWhere())
	if similar := e.similarTables(ctx, table); len(similar) > 0 {
		q := make([]string, len(similar))
		for i, n := range similar {
			q[i] = strconv.Quote(n)
		}
		why += " (tables of similar names there: " + strings.Join(q, ", ") + ")"
	}
	switch {
	case !e.PollerTables:
		return why + ": deploy the template (it creates the table) or fix plugin_config.state_table (SINK_STATE_TABLE)"
	case IsAWSEndpoint(e.DynamoEndpoint):
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

func APICode(err error) (code string, status int) {
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
