package deploytest

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// required parameters have no default; every scenario gives them.
var requiredParams = map[string]string{
	"BucketName":  "iggy-archive",
	"Stream":      "orders",
	"Topics":      "created,cancelled",
	"IggyAddress": "iggy.internal:8090",
}

type deployScenario struct {
	name   string
	params map[string]string

	objectARN, bucketARN, listPrefix string
	secretARN                        string // "" = no secret statement
	secretKeyARN, s3KeyARN           string // "" = no KMS statement
	vpc, newBucket                   bool
	arch                             string
	concurrency                      float64
	maxMessages                      string // "" = SINK_MAX_MESSAGES_PER_FILE absent
	// configObject and configParameter are what SinkConfig lets the
	// function read ("" = nothing).
	configObject, configParameter string
	// iceberg is the catalog the tables go to ("" = table_format none).
	iceberg string
}

func deployScenarios() []deployScenario {
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range requiredParams {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	secretARN := "arn:aws:secretsmanager:eu-west-1:210987654321:secret:prod/iggy-AbCdEf"
	secretKeyARN := "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	s3KeyARN := "arn:aws:kms:us-east-1:123456789012:key/9876fedc-12ab-34cd-56ef-1234567890ab"
	return []deployScenario{
		{
			name: "defaults", params: with(nil),
			objectARN: "arn:aws:s3:::iggy-archive/*", bucketARN: "arn:aws:s3:::iggy-archive", listPrefix: "*",
			arch: "arm64", concurrency: 1,
		},
		{
			name: "prefix, secret by name, message rotation, configuration in S3",
			params: with(map[string]string{"Prefix": "archive/iggy", "IggyCredentialsSecret": "prod/iggy",
				"FileRotation": "messages", "MaxMessagesPerFile": "5000", "SinkConfig": "s3://team-config/sinks/orders.toml"}),
			configObject: "arn:aws:s3:::team-config/sinks/orders.toml",
			objectARN:    "arn:aws:s3:::iggy-archive/archive/iggy/*", bucketARN: "arn:aws:s3:::iggy-archive", listPrefix: "archive/iggy/*",
			secretARN: "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/iggy-??????",
			arch:      "arm64", concurrency: 1, maxMessages: "5000",
		},
		{
			name: "secret by ARN, VPC, new bucket, x86_64",
			params: with(map[string]string{"IggyCredentialsSecret": secretARN, "SubnetIds": "subnet-1,subnet-2",
				"SecurityGroupIds": "sg-1", "CreateBucket": "true", "Architecture": "x86_64", "ReservedConcurrency": "2", "Prefix": "p",
				"SinkConfig": "ssm:/iggy/sinks/orders"}),
			configParameter: "arn:aws:ssm:us-east-1:123456789012:parameter/iggy/sinks/orders",
			objectARN:       "arn:aws:s3:::iggy-archive/p/*", bucketARN: "arn:aws:s3:::iggy-archive", listPrefix: "p/*",
			secretARN: secretARN, vpc: true, newBucket: true, arch: "x86_64", concurrency: 2,
		},
		{
			name: "SSE-KMS bucket, secret under a customer-managed key",
			params: with(map[string]string{"Prefix": "lake/iggy", "IggyCredentialsSecret": "prod/iggy",
				"IggyCredentialsKmsKeyArn": secretKeyARN, "S3KmsKeyArn": s3KeyARN}),
			objectARN: "arn:aws:s3:::iggy-archive/lake/iggy/*", bucketARN: "arn:aws:s3:::iggy-archive", listPrefix: "lake/iggy/*",
			secretARN:    "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/iggy-??????",
			secretKeyARN: secretKeyARN, s3KeyARN: s3KeyARN,
			arch: "arm64", concurrency: 1,
		},
		{
			name: "Iceberg tables in Glue",
			params: with(map[string]string{"Prefix": "lake", "OutputFormat": "parquet", "TableFormat": "iceberg",
				"IcebergCatalog": "glue", "IcebergNamespace": "orders_db"}),
			objectARN: "arn:aws:s3:::iggy-archive/lake/*", bucketARN: "arn:aws:s3:::iggy-archive", listPrefix: "lake/*",
			arch: "arm64", concurrency: 1, iceberg: "glue",
		},
		{
			name: "Iceberg tables in S3 Tables",
			params: with(map[string]string{"OutputFormat": "parquet", "TableFormat": "iceberg",
				"IcebergCatalog": "s3tables", "IcebergTableBucket": "iggy-tables"}),
			objectARN: "arn:aws:s3:::iggy-archive/*", bucketARN: "arn:aws:s3:::iggy-archive", listPrefix: "*",
			arch: "arm64", concurrency: 1, iceberg: "s3tables",
		},
		{
			name: "Iceberg tables in a REST catalog",
			params: with(map[string]string{"OutputFormat": "parquet", "TableFormat": "iceberg",
				"IcebergCatalog": "rest", "IcebergCatalogUri": "https://catalog.internal/api", "IcebergWarehouse": "lake"}),
			objectARN: "arn:aws:s3:::iggy-archive/*", bucketARN: "arn:aws:s3:::iggy-archive", listPrefix: "*",
			arch: "arm64", concurrency: 1, iceberg: "rest",
		},
	}
}

func TestTransformedTemplate(t *testing.T) {
	cfn := samTransform(t)
	for _, sc := range deployScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			s := newStack(t, cfn, sc.params)
			t.Run("schedule", func(t *testing.T) { checkSchedule(t, s, cfn) })
			t.Run("function", func(t *testing.T) { checkFunction(t, s, sc) })
			t.Run("environment", func(t *testing.T) { checkEnvironment(t, s, sc) })
			t.Run("iam", func(t *testing.T) { checkIAM(t, s, sc) })
			t.Run("state table", func(t *testing.T) { checkTable(t, s) })
			t.Run("bucket", func(t *testing.T) { checkBucket(t, s, sc) })
			t.Run("logs", func(t *testing.T) { checkLogs(t, s) })
			t.Run("alarms", func(t *testing.T) { checkAlarms(t, s) })
			t.Run("outputs", func(t *testing.T) { checkOutputs(t, s, sc) })
		})
	}
}

func resourcesOfType(s *stack, typ string) []string {
	var ids []string
	for id, r := range s.resources() {
		if r["Type"] == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func checkSchedule(t *testing.T, s *stack, cfn map[string]any) {
	// The audit's rule and permission are checked in scale_test.go.
	rules := slices.DeleteFunc(resourcesOfType(s, "AWS::Events::Rule"), func(id string) bool { return id == "AuditScheduleRule" })
	if len(rules) != 1 {
		t.Fatalf("want exactly one EventBridge rule, got %v", rules)
	}
	rule := s.resource(rules[0], "AWS::Events::Rule")
	if rule["ScheduleExpression"] != "rate(1 minute)" {
		t.Errorf("ScheduleExpression = %v, want the default rate(1 minute)", rule["ScheduleExpression"])
	}
	if rule["State"] != "ENABLED" {
		t.Errorf("rule State = %v", rule["State"])
	}
	targets, _ := rule["Targets"].([]any)
	if len(targets) != 1 {
		t.Fatalf("rule targets = %v", targets)
	}
	target := targets[0].(map[string]any)
	if target["Arn"] != "GetAtt(SinkFunction.Arn)" {
		t.Errorf("rule target = %v, want the sink function", target["Arn"])
	}
	// Any of these would replace the scheduled-event envelope the function expects.
	for _, k := range []string{"Input", "InputPath", "InputTransformer"} {
		if _, ok := target[k]; ok {
			t.Errorf("rule target sets %s: the function would not receive the scheduled event", k)
		}
	}
	perms := slices.DeleteFunc(resourcesOfType(s, "AWS::Lambda::Permission"), func(id string) bool { return id == "AuditSchedulePermission" })
	if len(perms) != 1 {
		t.Fatalf("want one Lambda permission for the rule, got %v", perms)
	}
	perm := s.resource(perms[0], "AWS::Lambda::Permission")
	if perm["Principal"] != "events.amazonaws.com" || perm["SourceArn"] != "GetAtt("+rules[0]+".Arn)" {
		t.Errorf("permission %v does not let only this rule invoke the function", perm)
	}
}

func checkFunction(t *testing.T, s *stack, sc deployScenario) {
	fns := resourcesOfType(s, "AWS::Lambda::Function")
	if !slices.Equal(fns, []string{"SinkFunction"}) {
		t.Fatalf("functions = %v", fns)
	}
	fn := s.resource("SinkFunction", "AWS::Lambda::Function")
	want := map[string]any{
		"Runtime":                      "provided.al2023",
		"Handler":                      "bootstrap",
		"MemorySize":                   "256",
		"Timeout":                      "120",
		"ReservedConcurrentExecutions": fmt.Sprint(sc.concurrency),
		"Role":                         "GetAtt(SinkFunctionRole.Arn)",
		"FunctionName":                 testStackName,
	}
	for k, v := range want {
		if fmt.Sprint(fn[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, fn[k], v)
		}
	}
	if !reflect.DeepEqual(fn["Architectures"], []any{sc.arch}) {
		t.Errorf("Architectures = %v, want [%s]", fn["Architectures"], sc.arch)
	}
	lc, _ := fn["LoggingConfig"].(map[string]any)
	if lc["LogFormat"] != "JSON" || lc["ApplicationLogLevel"] != "INFO" || lc["LogGroup"] != "Ref(SinkLogGroup)" {
		t.Errorf("LoggingConfig = %v, want JSON logs at INFO into SinkLogGroup", lc)
	}
	vpc, hasVPC := fn["VpcConfig"].(map[string]any)
	if hasVPC != sc.vpc {
		t.Fatalf("VpcConfig = %v, want present=%v", fn["VpcConfig"], sc.vpc)
	}
	if sc.vpc {
		if !reflect.DeepEqual(vpc["SubnetIds"], []any{"subnet-1", "subnet-2"}) || !reflect.DeepEqual(vpc["SecurityGroupIds"], []any{"sg-1"}) {
			t.Errorf("VpcConfig = %v", vpc)
		}
	}
}

// sinkFunction returns the function's properties before (template.yaml) or after the SAM transform.
func sinkFunction(t *testing.T, s *stack) map[string]any {
	t.Helper()
	if s.resources()["SinkFunction"]["Type"] == "AWS::Serverless::Function" {
		return s.resource("SinkFunction", "AWS::Serverless::Function")
	}
	return s.resource("SinkFunction", "AWS::Lambda::Function")
}

func functionEnv(t *testing.T, s *stack) map[string]string {
	t.Helper()
	fn := sinkFunction(t, s)
	vars, _ := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
	env := map[string]string{}
	for k, v := range vars {
		str, ok := v.(string)
		if !ok {
			t.Fatalf("environment variable %s = %v is not a string", k, v)
		}
		env[k] = str
	}
	return env
}

func checkEnvironment(t *testing.T, s *stack, sc deployScenario) {
	env := functionEnv(t, s)
	p := func(name string) string { return s.params[name].(string) }
	want := map[string]string{
		"SINK_BUCKET":            p("BucketName"),
		"SINK_PREFIX":            p("Prefix"),
		"SINK_STREAM":            p("Stream"),
		"SINK_TOPICS":            p("Topics"),
		"SINK_CONSUMER_GROUP":    p("ConsumerGroup"),
		"SINK_OUTPUT_FORMAT":     p("OutputFormat"),
		"SINK_FILE_ROTATION":     p("FileRotation"),
		"SINK_MAX_FILE_SIZE":     p("MaxFileSize"),
		"SINK_MAX_FILE_AGE":      p("MaxFileAge"),
		"SINK_COMPRESSION":       p("Compression"),
		"SINK_INCLUDE_HEADERS":   p("IncludeHeaders"),
		"SINK_PATH_TEMPLATE":     p("PathTemplate"),
		"SINK_STATE_TABLE":       "Ref(StateTable)",
		"SINK_METRICS_NAMESPACE": p("MetricsNamespace"),
		"SINK_RUN_TIMEOUT":       p("RunTimeout"),
		"IGGY_ADDRESS":           p("IggyAddress"),
		"IGGY_PROTOCOL":          p("IggyProtocol"),
		// Declared empty for `sam local invoke -n env.local.json`; empty means unset.
		"AWS_ENDPOINT_URL_S3":       "",
		"AWS_ENDPOINT_URL_DYNAMODB": "",
		"SINK_PATH_STYLE":           "",
		"SINK_CONFIG":               p("SinkConfig"),
		"SINK_MAX_WORKERS":          p("MaxWorkers"),
		"SINK_WORKER_RATE":          p("WorkerRate"),
		"SINK_TABLE_FORMAT":         p("TableFormat"),
		"SINK_STACK_GRANTS": "IggyCredentialsSecret=" + p("IggyCredentialsSecret") + ",S3KmsKeyArn=" + p("S3KmsKeyArn") +
			",TableFormat=" + p("TableFormat") + ",IcebergCatalog=" + p("IcebergCatalog") + ",MaxWorkers=" + p("MaxWorkers") + ",Prefix=" + p("Prefix"),
	}
	if sc.iceberg != "" {
		want["SINK_ICEBERG_CATALOG"] = sc.iceberg
		want["SINK_ICEBERG_NAMESPACE"] = p("IcebergNamespace")
		want["SINK_ICEBERG_TABLE"] = p("IcebergTable")
		switch sc.iceberg {
		case "s3tables":
			want["SINK_ICEBERG_WAREHOUSE"] = "arn:aws:s3tables:us-east-1:123456789012:bucket/" + p("IcebergTableBucket")
		case "rest":
			want["SINK_ICEBERG_WAREHOUSE"] = p("IcebergWarehouse")
			want["SINK_ICEBERG_CATALOG_URI"] = p("IcebergCatalogUri")
		}
	}
	if sc.maxMessages != "" {
		want["SINK_MAX_MESSAGES_PER_FILE"] = sc.maxMessages
	}
	if secret := p("IggyCredentialsSecret"); secret != "" {
		want["IGGY_CREDENTIALS_SECRET"] = secret
	}
	if sc.s3KeyARN != "" {
		want["SINK_SERVER_SIDE_ENCRYPTION"] = "aws:kms"
		want["SINK_SSE_KMS_KEY_ID"] = sc.s3KeyARN
	}
	if !reflect.DeepEqual(env, want) {
		for k, v := range want {
			if got, ok := env[k]; !ok || got != v {
				t.Errorf("%s = %q (set: %v), want %q", k, got, ok, v)
			}
		}
		for k, v := range env {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected variable %s = %q", k, v)
			}
		}
	}
}

type statement struct {
	policy    string
	actions   []string
	resources []string
	condition map[string]any
}

func asStrings(t *testing.T, v any) []string {
	t.Helper()
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, it := range x {
			s, ok := it.(string)
			if !ok {
				t.Fatalf("%v is not a string", it)
			}
			out = append(out, s)
		}
		return out
	}
	t.Fatalf("%v is neither a string nor a list", v)
	return nil
}

// statements returns every inline IAM statement in the stack.
func statements(t *testing.T, s *stack) []statement {
	t.Helper()
	var out []statement
	for _, id := range resourcesOfType(s, "AWS::IAM::Role") {
		role := s.resource(id, "AWS::IAM::Role")
		policies, _ := role["Policies"].([]any)
		for _, p := range policies {
			pol := p.(map[string]any)
			doc := pol["PolicyDocument"].(map[string]any)
			for _, st := range doc["Statement"].([]any) {
				m := st.(map[string]any)
				if m["Effect"] != "Allow" {
					t.Fatalf("statement %v: only Allow statements are expected", m)
				}
				if _, ok := m["NotAction"]; ok {
					t.Fatalf("statement %v uses NotAction", m)
				}
				if _, ok := m["NotResource"]; ok {
					t.Fatalf("statement %v uses NotResource", m)
				}
				c, _ := m["Condition"].(map[string]any)
				out = append(out, statement{policy: fmt.Sprint(pol["PolicyName"]), actions: asStrings(t, m["Action"]), resources: asStrings(t, m["Resource"]), condition: c})
			}
		}
	}
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
		if ids := resourcesOfType(s, typ); len(ids) > 0 {
			t.Fatalf("unexpected %s resources %v: the checks below would not see them", typ, ids)
		}
	}
	return out
}

func checkIAM(t *testing.T, s *stack, sc deployScenario) {
	roles := resourcesOfType(s, "AWS::IAM::Role")
	if !slices.Equal(roles, []string{"SinkFunctionRole"}) {
		t.Fatalf("roles = %v", roles)
	}
	role := s.resource("SinkFunctionRole", "AWS::IAM::Role")
	trust := fmt.Sprint(role["AssumeRolePolicyDocument"])
	if !strings.Contains(trust, "lambda.amazonaws.com") || !strings.Contains(trust, "sts:AssumeRole") {
		t.Errorf("trust policy %s does not let only Lambda assume the role", trust)
	}
	var managed []string
	if m, ok := role["ManagedPolicyArns"]; ok {
		managed = asStrings(t, m)
	}
	var wantManaged []string
	if sc.vpc {
		wantManaged = []string{"arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"}
	}
	if !slices.Equal(managed, wantManaged) {
		t.Errorf("managed policies = %v, want %v", managed, wantManaged)
	}

	granted := map[string][]string{} // action -> resources
	for _, st := range statements(t, s) {
		for _, r := range st.resources {
			if r == "*" || strings.HasSuffix(r, ":*") && !strings.HasPrefix(r, "GetAtt(") {
				t.Errorf("policy %s grants %v on %q: every resource must be named", st.policy, st.actions, r)
			}
		}
		for _, a := range st.actions {
			if strings.Contains(a, "*") {
				t.Errorf("policy %s grants wildcard action %q", st.policy, a)
			}
			granted[a] = append(granted[a], st.resources...)
		}
		if slices.Contains(st.actions, "s3:ListBucket") {
			like, _ := st.condition["StringLike"].(map[string]any)
			if len(st.condition) != 1 || like["s3:prefix"] != sc.listPrefix {
				t.Errorf("s3:ListBucket condition = %v, want StringLike s3:prefix %q", st.condition, sc.listPrefix)
			}
		} else if slices.Contains(st.actions, "kms:Decrypt") {
			// A key is used only through the service that needs it.
			eq, _ := st.condition["StringEquals"].(map[string]any)
			via, _ := eq["kms:ViaService"].(string)
			if len(st.condition) != 1 || (via != "secretsmanager.us-east-1.amazonaws.com" && via != "s3.us-east-1.amazonaws.com") {
				t.Errorf("%v condition = %v, want StringEquals kms:ViaService of Secrets Manager or S3", st.actions, st.condition)
			}
			if slices.Contains(st.actions, "kms:GenerateDataKey") != (via == "s3.us-east-1.amazonaws.com") {
				t.Errorf("%v via %s: GenerateDataKey is for S3 only", st.actions, via)
			}
		} else if st.condition != nil {
			t.Errorf("unexpected condition %v on %v", st.condition, st.actions)
		}
	}

	want := map[string][]string{
		"logs:CreateLogStream":    {"GetAtt(SinkLogGroup.Arn)"},
		"logs:PutLogEvents":       {"GetAtt(SinkLogGroup.Arn)"},
		"s3:PutObject":            {sc.objectARN},
		"s3:GetObject":            {sc.objectARN},
		"s3:AbortMultipartUpload": {sc.objectARN},
		// only error objects, under the default error prefix
		"s3:DeleteObject":               {strings.TrimSuffix(sc.objectARN, "*") + "_errors/*"},
		"s3:ListBucket":                 {sc.bucketARN},
		"s3:ListBucketMultipartUploads": {sc.bucketARN},
		"dynamodb:GetItem":              {"GetAtt(StateTable.Arn)"},
		"dynamodb:PutItem":              {"GetAtt(StateTable.Arn)"},
		"dynamodb:UpdateItem":           {"GetAtt(StateTable.Arn)"},
		"dynamodb:DescribeTable":        {"GetAtt(StateTable.Arn)"},
	}
	if sc.secretARN != "" {
		want["secretsmanager:GetSecretValue"] = []string{sc.secretARN}
	}
	if sc.configObject != "" {
		want["s3:GetObject"] = append(want["s3:GetObject"], sc.configObject)
	}
	if sc.configParameter != "" {
		want["ssm:GetParameter"] = []string{sc.configParameter}
	}
	switch sc.iceberg {
	case "glue":
		glue := "arn:aws:glue:us-east-1:123456789012:"
		ns := s.params["IcebergNamespace"].(string)
		for _, a := range []string{"glue:GetDatabase", "glue:CreateDatabase"} {
			want[a] = []string{glue + "catalog", glue + "database/" + ns}
		}
		for _, a := range []string{"glue:GetTable", "glue:CreateTable", "glue:UpdateTable"} {
			want[a] = []string{glue + "catalog", glue + "database/" + ns, glue + "table/" + ns + "/*"}
		}
	case "s3tables":
		bucket := "arn:aws:s3tables:us-east-1:123456789012:bucket/" + s.params["IcebergTableBucket"].(string)
		for _, a := range []string{"s3tables:GetTableBucket", "s3tables:GetNamespace", "s3tables:CreateNamespace", "s3tables:CreateTable",
			"s3tables:GetTableMetadataLocation", "s3tables:UpdateTableMetadataLocation", "s3tables:GetTableData", "s3tables:PutTableData"} {
			want[a] = []string{bucket, bucket + "/table/*"}
		}
	}
	var decrypt []string
	if sc.secretKeyARN != "" {
		decrypt = append(decrypt, sc.secretKeyARN)
	}
	if sc.s3KeyARN != "" {
		want["kms:GenerateDataKey"] = []string{sc.s3KeyARN}
		decrypt = append(decrypt, sc.s3KeyARN)
	}
	if decrypt != nil {
		want["kms:Decrypt"] = decrypt
	}
	if !reflect.DeepEqual(granted, want) {
		for a, r := range granted {
			if !slices.Equal(r, want[a]) {
				t.Errorf("%s granted on %v, want %v", a, r, want[a])
			}
		}
		for a, r := range want {
			if _, ok := granted[a]; !ok {
				t.Errorf("%s not granted, want it on %v", a, r)
			}
		}
	}
}

func checkTable(t *testing.T, s *stack) {
	tables := resourcesOfType(s, "AWS::DynamoDB::Table")
	if !slices.Equal(tables, []string{"StateTable"}) {
		t.Fatalf("tables = %v", tables)
	}
	tbl := s.resource("StateTable", "AWS::DynamoDB::Table")
	if tbl["BillingMode"] != "PAY_PER_REQUEST" {
		t.Errorf("BillingMode = %v", tbl["BillingMode"])
	}
	if pitr, _ := tbl["PointInTimeRecoverySpecification"].(map[string]any); pitr["PointInTimeRecoveryEnabled"] != true {
		t.Errorf("point-in-time recovery is not enabled: %v", tbl["PointInTimeRecoverySpecification"])
	}
	if sse, _ := tbl["SSESpecification"].(map[string]any); sse["SSEEnabled"] != true {
		t.Errorf("server-side encryption is not enabled: %v", tbl["SSESpecification"])
	}
	wantKeys := []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}}
	wantAttrs := []any{map[string]any{"AttributeName": "pk", "AttributeType": "S"}}
	if !reflect.DeepEqual(tbl["KeySchema"], wantKeys) || !reflect.DeepEqual(tbl["AttributeDefinitions"], wantAttrs) {
		t.Errorf("key = %v / %v, want one string partition key pk", tbl["KeySchema"], tbl["AttributeDefinitions"])
	}
	if r := s.resources()["StateTable"]; r["DeletionPolicy"] != "Retain" || r["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("the state table is not retained on stack deletion or replacement")
	}
}

func checkBucket(t *testing.T, s *stack, sc deployScenario) {
	buckets := resourcesOfType(s, "AWS::S3::Bucket")
	if !sc.newBucket {
		if len(buckets) != 0 {
			t.Fatalf("CreateBucket=false still creates %v", buckets)
		}
		return
	}
	if !slices.Equal(buckets, []string{"SinkBucket"}) {
		t.Fatalf("buckets = %v", buckets)
	}
	b := s.resource("SinkBucket", "AWS::S3::Bucket")
	if b["BucketName"] != s.params["BucketName"] {
		t.Errorf("BucketName = %v", b["BucketName"])
	}
	enc := fmt.Sprint(b["BucketEncryption"])
	if !strings.Contains(enc, "SSEAlgorithm:AES256") && !strings.Contains(enc, "SSEAlgorithm:aws:kms") {
		t.Errorf("bucket encryption = %s", enc)
	}
	pab, _ := b["PublicAccessBlockConfiguration"].(map[string]any)
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if pab[k] != true {
			t.Errorf("public access block %s = %v", k, pab[k])
		}
	}
	found := false
	for _, r := range b["LifecycleConfiguration"].(map[string]any)["Rules"].([]any) {
		rule := r.(map[string]any)
		abort, _ := rule["AbortIncompleteMultipartUpload"].(map[string]any)
		if rule["Status"] == "Enabled" && fmt.Sprint(abort["DaysAfterInitiation"]) == "1" {
			found = true
		}
	}
	if !found {
		t.Errorf("no enabled lifecycle rule aborts incomplete multipart uploads after 1 day")
	}
}

func checkLogs(t *testing.T, s *stack) {
	lg := s.resource("SinkLogGroup", "AWS::Logs::LogGroup")
	fn := s.resource("SinkFunction", "AWS::Lambda::Function")
	if lg["LogGroupName"] != "/aws/lambda/"+fmt.Sprint(fn["FunctionName"]) {
		t.Errorf("LogGroupName = %v, want /aws/lambda/<function name %v>", lg["LogGroupName"], fn["FunctionName"])
	}
	if fmt.Sprint(lg["RetentionInDays"]) != "30" {
		t.Errorf("RetentionInDays = %v, want the default 30", lg["RetentionInDays"])
	}
}

func checkAlarms(t *testing.T, s *stack) {
	alarms := resourcesOfType(s, "AWS::CloudWatch::Alarm")
	if !slices.Equal(alarms, []string{"AuditAlarm", "ErrorsAlarm", "LagAlarm"}) { // AuditAlarm: scale_test.go
		t.Fatalf("alarms = %v", alarms)
	}
	errs := s.resource("ErrorsAlarm", "AWS::CloudWatch::Alarm")
	wantErrs := map[string]string{"Namespace": "AWS/Lambda", "MetricName": "Errors", "Statistic": "Sum", "Period": "300",
		"EvaluationPeriods": "1", "Threshold": "1", "ComparisonOperator": "GreaterThanOrEqualToThreshold"}
	for k, v := range wantErrs {
		if fmt.Sprint(errs[k]) != v {
			t.Errorf("ErrorsAlarm %s = %v, want %s", k, errs[k], v)
		}
	}
	if !reflect.DeepEqual(errs["Dimensions"], []any{map[string]any{"Name": "FunctionName", "Value": "Ref(SinkFunction)"}}) {
		t.Errorf("ErrorsAlarm dimensions = %v", errs["Dimensions"])
	}
	lag := s.resource("LagAlarm", "AWS::CloudWatch::Alarm")
	wantLag := map[string]string{"Namespace": s.params["MetricsNamespace"].(string), "MetricName": "Lag", "Statistic": "Maximum",
		"EvaluationPeriods": "3", "Threshold": s.params["LagAlarmThreshold"].(string), "ComparisonOperator": "GreaterThanThreshold"}
	for k, v := range wantLag {
		if fmt.Sprint(lag[k]) != v {
			t.Errorf("LagAlarm %s = %v, want %s", k, lag[k], v)
		}
	}
}

func checkOutputs(t *testing.T, s *stack, sc deployScenario) {
	outs := s.eval(mapAt(t, s.tpl, "Outputs")).(map[string]any)
	want := map[string]string{
		"FunctionArn":     "GetAtt(SinkFunction.Arn)",
		"FunctionName":    "Ref(SinkFunction)",
		"StateTableName":  "Ref(StateTable)",
		"LogGroupName":    "Ref(SinkLogGroup)",
		"ErrorsAlarmName": "Ref(ErrorsAlarm)",
		"LagAlarmName":    "Ref(LagAlarm)",
		"BucketName":      "iggy-archive",
		"DashboardName":   "Ref(SinkDashboard)",
		"DashboardUrl":    "https://" + testRegion + ".console.aws.amazon.com/cloudwatch/home?region=" + testRegion + "#dashboards:name=Ref(SinkDashboard)",
		"AuditAlarmName":  "Ref(AuditAlarm)",
	}
	if sc.newBucket {
		want["BucketName"] = "Ref(SinkBucket)"
	}
	for k, v := range want {
		o, _ := outs[k].(map[string]any)
		if o["Value"] != v {
			t.Errorf("output %s = %v, want %s", k, o["Value"], v)
		}
	}
	if len(outs) != len(want) {
		t.Errorf("outputs = %v, want exactly %d", outs, len(want))
	}
}
