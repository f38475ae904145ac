package deploytest

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// The AWS SDK packages whose operations need IAM permissions.
const (
	sdkS3      = "github.com/aws/aws-sdk-go-v2/service/s3"
	sdkS3Types = "github.com/aws/aws-sdk-go-v2/service/s3/types"
	sdkDynamo  = "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	sdkSecrets = "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	sdkKMS     = "github.com/aws/aws-sdk-go-v2/service/kms"
	sdkSSM     = "github.com/aws/aws-sdk-go-v2/service/ssm"
	sdkLambda  = "github.com/aws/aws-sdk-go-v2/service/lambda"
)

// opActions maps an SDK operation (package path + "." + operation) to the
// IAM actions it needs (Service Authorization Reference). An operation the
// code calls that is missing here fails the test: add it with its actions.
var opActions = map[string][]string{
	sdkS3 + ".PutObject":                       {"s3:PutObject"},
	sdkS3 + ".CreateMultipartUpload":           {"s3:PutObject"},
	sdkS3 + ".UploadPart":                      {"s3:PutObject"},
	sdkS3 + ".CompleteMultipartUpload":         {"s3:PutObject"},
	sdkS3 + ".AbortMultipartUpload":            {"s3:AbortMultipartUpload"},
	sdkS3 + ".ListMultipartUploads":            {"s3:ListBucketMultipartUploads"},
	sdkS3 + ".ListParts":                       {"s3:ListMultipartUploadParts"},
	sdkS3 + ".HeadObject":                      {"s3:GetObject"},
	sdkS3 + ".GetObject":                       {"s3:GetObject"},
	sdkS3 + ".ListObjectsV2":                   {"s3:ListBucket"},
	sdkS3 + ".ListObjects":                     {"s3:ListBucket"},
	sdkS3 + ".HeadBucket":                      {"s3:ListBucket"},
	sdkS3 + ".DeleteObject":                    {"s3:DeleteObject"},
	sdkS3 + ".DeleteObjects":                   {"s3:DeleteObject"},
	sdkS3 + ".CopyObject":                      {"s3:PutObject", "s3:GetObject"},
	sdkS3 + ".CreateBucket":                    {"s3:CreateBucket"},
	sdkS3 + ".GetBucketLifecycleConfiguration": {"s3:GetLifecycleConfiguration"},
	sdkDynamo + ".GetItem":                     {"dynamodb:GetItem"},
	sdkDynamo + ".PutItem":                     {"dynamodb:PutItem"},
	sdkDynamo + ".UpdateItem":                  {"dynamodb:UpdateItem"},
	sdkDynamo + ".DeleteItem":                  {"dynamodb:DeleteItem"},
	sdkDynamo + ".Query":                       {"dynamodb:Query"},
	sdkDynamo + ".Scan":                        {"dynamodb:Scan"},
	sdkDynamo + ".BatchGetItem":                {"dynamodb:BatchGetItem"},
	sdkDynamo + ".BatchWriteItem":              {"dynamodb:BatchWriteItem"},
	sdkDynamo + ".DescribeTable":               {"dynamodb:DescribeTable"},
	sdkDynamo + ".CreateTable":                 {"dynamodb:CreateTable"},
	sdkDynamo + ".ListTables":                  {"dynamodb:ListTables"},
	sdkSecrets + ".GetSecretValue":             {"secretsmanager:GetSecretValue"},
	sdkSecrets + ".DescribeSecret":             {"secretsmanager:DescribeSecret"},
	sdkSSM + ".GetParameter":                   {"ssm:GetParameter"},
	sdkLambda + ".Invoke":                      {"lambda:InvokeFunction"},
}

// implied are actions a service performs for the code on the function's
// behalf, keyed by what in the code makes it do so.
var implied = map[string][]string{
	// SSE-KMS: S3 asks KMS for a data key on every write and decrypts it to
	// complete a multipart upload or to read an object back.
	sdkS3Types + ".ServerSideEncryptionAwsKms": {"kms:GenerateDataKey", "kms:Decrypt"},
	// A secret encrypted with a customer-managed key is decrypted with the
	// caller's permission on that key.
	sdkSecrets + ".GetSecretValue": {"kms:Decrypt"},
}

// notForTheFunction are actions the code has but the Lambda never performs,
// with the reason; the test checks the reason still holds.
var notForTheFunction = map[string]string{
	"dynamodb:CreateTable":         "only `poller` creates a missing state table (app.Options.CreateTable, PollerTables); the template creates it for the function",
	"dynamodb:ListTables":          "only `poller` lists tables, to name those like a missing state table (app.Options.PollerTables); the function's error names the table alone",
	"s3:GetLifecycleConfiguration": "only `poller check` reads the bucket's lifecycle rules (ops.Checker.Check; runs use Preflight, which does not)",
}

// catalogActions are the IAM actions of each call internal/icetable makes
// of an Iceberg catalog, for the two catalogs on AWS (Glue, and the S3
// Tables Iceberg REST endpoint, which maps each REST operation to S3 Tables
// actions); iceberg-go makes the AWS calls, so they are keyed by icetable's
// own calls: opening a catalog, the icetable.Catalog methods on r.Catalog,
// and tx.Commit (a table commit: Glue's conditional UpdateTable, or the
// REST commit endpoint). A REST catalog elsewhere needs no AWS action.
var catalogActions = map[string][]string{
	"rest.NewCatalog":      {"s3tables:GetTableBucket"}, // GET /v1/config
	"glue.NewCatalog":      nil,
	"CheckNamespaceExists": {"glue:GetDatabase", "s3tables:GetNamespace"},
	"CreateNamespace":      {"glue:CreateDatabase", "s3tables:CreateNamespace"},
	"LoadTable":            {"glue:GetTable", "s3tables:GetTableMetadataLocation", "s3tables:GetTableData"},
	"CreateTable":          {"glue:GetTable", "glue:CreateTable", "s3tables:CreateTable", "s3tables:PutTableData"},
	"Commit":               {"glue:GetTable", "glue:UpdateTable", "s3tables:UpdateTableMetadataLocation", "s3tables:PutTableData", "s3tables:GetTableData"},
}

// catalogUses finds icetable's catalog calls in one file (see catalogActions).
func catalogUses(t *testing.T, file string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	uses := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		key := ""
		switch x := sel.X.(type) {
		case *ast.Ident: // rest.NewCatalog, glue.NewCatalog, tx.Commit
			if (x.Name == "rest" || x.Name == "glue") && sel.Sel.Name == "NewCatalog" || x.Name == "tx" && sel.Sel.Name == "Commit" {
				key = sel.Sel.Name
				if x.Name != "tx" {
					key = x.Name + "." + key
				}
			}
		case *ast.SelectorExpr: // r.Catalog.LoadTable
			if x.Sel.Name == "Catalog" {
				key = sel.Sel.Name
			}
		}
		if key == "" {
			return true
		}
		if _, known := catalogActions[key]; !known {
			t.Errorf("%s: icetable calls the catalog's %s: add it and its IAM actions to catalogActions", fset.Position(sel.Pos()), key)
		}
		if _, seen := uses[key]; !seen {
			uses[key] = fset.Position(sel.Pos()).String()
		}
		return true
	})
	return uses
}

// runtimeActions are granted for the Lambda runtime, not for the code.
var runtimeActions = []string{"logs:CreateLogStream", "logs:PutLogEvents"}

// codeActions derives the IAM actions the function's code needs: it reads
// the Go source of every package of this module that cmd/lambda links, and
// finds the SDK operations it uses by their input types (s3.PutObjectInput)
// and paginators, and the settings that make a service act for it.
func codeActions(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,Module", "./cmd/lambda")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct {
		ImportPath, Dir string
		GoFiles         []string
		Module          *struct{ Path string }
	}
	found := map[string][]string{} // action -> where
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/iggy-s3-sink/iggy-s3-sink" {
			continue
		}
		for _, f := range p.GoFiles {
			for use, where := range sdkUses(t, filepath.Join(p.Dir, f)) {
				where = strings.TrimPrefix(where, repoRoot(t)+string(filepath.Separator))
				actions, known := opActions[use]
				if !known && strings.HasPrefix(use, sdkKMS+".") {
					t.Errorf("%s: the code calls KMS (%s): add its action to opActions", where, use)
				}
				if !known && isOperation(use) {
					t.Errorf("%s uses the SDK operation %s: add it and its IAM actions to opActions", where, use)
				}
				for _, a := range append(actions, implied[use]...) {
					found[a] = append(found[a], where)
				}
			}
			if p.ImportPath == "github.com/iggy-s3-sink/iggy-s3-sink/internal/icetable" {
				for use, where := range catalogUses(t, filepath.Join(p.Dir, f)) {
					where = strings.TrimPrefix(where, repoRoot(t)+string(filepath.Separator))
					for _, a := range catalogActions[use] {
						found[a] = append(found[a], where)
					}
				}
			}
		}
	}
	return found
}

// isOperation says whether an SDK identifier names an operation's input.
func isOperation(use string) bool {
	for _, svc := range []string{sdkS3, sdkDynamo, sdkSecrets, sdkKMS, sdkSSM, sdkLambda} {
		if strings.HasPrefix(use, svc+".") && !strings.Contains(strings.TrimPrefix(use, svc+"."), ".") {
			return true
		}
	}
	return false
}

var paginator = regexp.MustCompile(`^New(\w+)Paginator$`)

// sdkUses returns "package path.Operation" for every SDK input type and
// paginator a file names, and "package path.Identifier" for every other
// identifier of the SDK packages above, each with one position.
func sdkUses(t *testing.T, file string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	alias := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !slices.Contains([]string{sdkS3, sdkS3Types, sdkDynamo, sdkSecrets, sdkKMS, sdkSSM, sdkLambda}, path) {
			continue
		}
		name := path[strings.LastIndexByte(path, '/')+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		alias[name] = path
	}
	uses := map[string]string{}
	if len(alias) == 0 {
		return uses
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || alias[id.Name] == "" {
			return true
		}
		name := sel.Sel.Name
		switch {
		case alias[id.Name] == sdkS3Types:
		case strings.HasSuffix(name, "Input"):
			name = strings.TrimSuffix(name, "Input")
		case paginator.MatchString(name):
			name = paginator.FindStringSubmatch(name)[1]
		default:
			return true // clients, options, outputs: no call of their own
		}
		key := alias[id.Name] + "." + name
		if _, seen := uses[key]; !seen {
			uses[key] = fset.Position(sel.Pos()).String()
		}
		return true
	})
	return uses
}

// templateActions returns every action the function's role may be granted
// (in any branch of a condition), with its statement's Sid.
func templateActions(t *testing.T) map[string]string {
	t.Helper()
	role := mapAt(t, mapAt(t, templateYAML(t), "Resources"), "SinkFunctionRole")
	granted := map[string]string{}
	var walk func(v any, sid string)
	walk = func(v any, sid string) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["Sid"].(string); ok {
				sid = s
			}
			for k, val := range x {
				if k == "Action" {
					for _, a := range asStrings(t, val) {
						granted[a] = sid
					}
					continue
				}
				walk(val, sid)
			}
		case []any:
			for _, e := range x {
				walk(e, sid)
			}
		}
	}
	walk(mapAt(t, role, "Properties")["Policies"], "")
	return granted
}

// TestIAMMatchesCode (issue 15 item 11): the function's role grants exactly
// what the code calls — nothing used but not granted (an AccessDenied in
// production, like HeadObject without s3:GetObject), nothing granted but
// unused (like s3:ListMultipartUploadParts).
func TestIAMMatchesCode(t *testing.T) {
	used := codeActions(t)
	granted := templateActions(t)
	if len(used) == 0 {
		t.Fatal("no SDK operation found in the code: the derivation is broken")
	}
	for _, a := range sortedKeys(used) {
		_, ok := granted[a]
		reason, exempt := notForTheFunction[a]
		switch {
		case ok && exempt:
			t.Errorf("%s is granted, but %s", a, reason)
		case !ok && !exempt:
			t.Errorf("used but not granted: %s (needed by %s)", a, strings.Join(used[a], ", "))
		}
	}
	for _, a := range sortedKeys(granted) {
		if _, ok := used[a]; !ok && !slices.Contains(runtimeActions, a) {
			t.Errorf("granted but unused: %s (statement %s)", a, granted[a])
		}
	}
	// The exemptions are real: the function never asks for the table to be
	// created, nor for similar tables to be listed.
	src := string(readRepoFile(t, "cmd/lambda/main.go")) + string(readRepoFile(t, "cmd/lambda/modes.go"))
	for option, action := range map[string]string{"CreateTable": "dynamodb:CreateTable is", "PollerTables": "dynamodb:CreateTable and dynamodb:ListTables are"} {
		if strings.Contains(src, option) {
			t.Errorf("cmd/lambda mentions %s: %s no longer poller-only", option, action)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestPrefixParameterIsWhatTheCodeKeeps (issue 15 item 11): the template's
// Prefix pattern accepts exactly the prefixes the code keeps as written (no
// '/' to trim, no empty, "." or ".." part), so that the policy's resources
// (bucket/prefix/*) are where the code writes; and no IAM wildcard.
func TestPrefixParameterIsWhatTheCodeKeeps(t *testing.T) {
	decl := mapAt(t, mapAt(t, templateYAML(t), "Parameters"), "Prefix")
	candidates := []string{"", "iggy", "iggy/raw", "a.b/c-d_e", ".hidden/x", "..x", "...", "a/.../b",
		"/", "/iggy", "iggy/", "x//", "a//b", ".", "..", "a/./b", "a/../b", "../", "iggy*", "i?gy", "a b/c"}
	for _, p := range candidates {
		patternOK := checkParameter(decl, p) == nil
		codeKeeps := keys.CheckPrefix(p) == nil && strings.Trim(p, "/") == p && !strings.ContainsAny(p, "*?")
		if patternOK != codeKeeps {
			t.Errorf("Prefix %q: template accepts = %v, code keeps it as written = %v", p, patternOK, codeKeeps)
		}
	}
}
