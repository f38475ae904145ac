package configsource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/testkit/testenv"
)

const sourcedTOML = `
[[streams]]
stream = "orders"
topics = ["created"]

[plugin_config]
bucket = "from-file"
region = "eu-west-1"
compression = "zstd"

[transforms.delete_fields]
enabled = true
fields = ["password"]
`

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func checkSourced(t *testing.T, ref string, env map[string]string, base string) {
	t.Helper()
	cfg, err := Load(context.Background(), ref, base, envOf(env))
	if err != nil {
		t.Fatalf("Load(%q): %v", ref, err)
	}
	if cfg.Plugin.Compression != "zstd" || len(cfg.Transforms) != 1 || cfg.Streams[0].Stream != "orders" {
		t.Fatalf("Load(%q) did not read the file: %+v", ref, cfg.Plugin)
	}
	// The environment still overrides the file.
	if cfg.Plugin.Bucket != "from-env" {
		t.Fatalf("bucket %q: the environment must win over the file", cfg.Plugin.Bucket)
	}
}

func TestLoadConfigBundledPath(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "examples", "sink.toml"), []byte(sourcedTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SINK_BUCKET": "from-env"}
	checkSourced(t, "examples/sink.toml", env, root)                       // relative to the package
	checkSourced(t, filepath.Join(root, "examples", "sink.toml"), env, "") // a plain path
	_, err := Load(context.Background(), "examples/missing.toml", root, envOf(env))
	if err == nil || !strings.Contains(err.Error(), "CONFIG_FILE=examples/missing.toml sam build") {
		t.Fatalf("a file missing from the package: %v; want the build hint", err)
	}
}

func TestLoadConfigFromS3(t *testing.T) {
	srv := testenv.StartVersity(t)
	srv.CreateBucket(t, "configs")
	_, err := srv.Client(t).PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String("configs"), Key: aws.String("sinks/orders.toml"), Body: strings.NewReader(sourcedTOML)})
	if err != nil {
		t.Fatal(err)
	}
	// As on Lambda: the default AWS credentials and region.
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	checkSourced(t, "s3://configs/sinks/orders.toml", map[string]string{"SINK_BUCKET": "from-env"}, "")

	// Or the sink's own S3 settings from the environment.
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	checkSourced(t, "s3://configs/sinks/orders.toml", map[string]string{"SINK_BUCKET": "from-env",
		"SINK_ENDPOINT": srv.Endpoint, "SINK_ACCESS_KEY_ID": srv.AccessKey, "SINK_SECRET_ACCESS_KEY": srv.SecretKey, "SINK_REGION": "us-east-1"}, "")

	for ref, want := range map[string]string{
		"s3://configs/nope.toml": "s3://configs/nope.toml",
		"s3://configs":           "want s3://bucket/key",
	} {
		_, err := Load(context.Background(), ref, "", envOf(map[string]string{"SINK_ENDPOINT": srv.Endpoint,
			"SINK_ACCESS_KEY_ID": srv.AccessKey, "SINK_SECRET_ACCESS_KEY": srv.SecretKey, "SINK_REGION": "us-east-1"}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%q) = %v, want an error naming %q", ref, err, want)
		}
	}
}

// motoSSM starts moto and points the default AWS configuration's SSM at
// it, as the function's own credentials and region would be; it returns a
// client to write parameters with.
func motoSSM(t *testing.T) *ssm.Client {
	t.Helper()
	moto := testenv.StartMoto(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "moto")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "moto-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL_SSM", moto.Endpoint)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	client := ssm.New(ssm.Options{Region: "us-east-1", BaseEndpoint: aws.String(moto.Endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("moto", "moto-secret", "")})
	return client
}

func TestLoadConfigFromSSM(t *testing.T) {
	client := motoSSM(t)
	for name, typ := range map[string]ssmtypes.ParameterType{"/iggy/sink": ssmtypes.ParameterTypeString, "/iggy/secure": ssmtypes.ParameterTypeSecureString} {
		_, err := client.PutParameter(context.Background(), &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(sourcedTOML), Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		checkSourced(t, "ssm:"+name, map[string]string{"SINK_BUCKET": "from-env"}, "")
	}
	_, err := Load(context.Background(), "ssm:/iggy/none", "", envOf(map[string]string{"SINK_BUCKET": "b"}))
	if err == nil || !strings.Contains(err.Error(), "ssm:/iggy/none") || !strings.Contains(err.Error(), "ParameterNotFound") {
		t.Fatalf("missing parameter: %v", err)
	}
}

// TestConfigSourceReload: a configuration in S3 or SSM is read again when it
// changes (one request per call); an edit that no longer loads fails every
// call, naming the key, until it is mended - the old one is never kept.
func TestConfigSourceReload(t *testing.T) {
	ctx := context.Background()
	edits := []struct {
		name, doc string
		want      string // compression after the reload; "" = an error naming wantErr
		wantErr   string
	}{
		{"an edit", strings.Replace(sourcedTOML, `"zstd"`, `"gzip"`, 1), "gzip", ""},
		{"a broken edit", strings.Replace(sourcedTOML, `compression = "zstd"`, `compression = "brotli"`, 1), "", "plugin_config.compression"},
		{"mended", strings.Replace(sourcedTOML, `"zstd"`, `"none"`, 1), "none", ""},
	}
	check := func(t *testing.T, src *Source, put func(doc string)) {
		t.Helper()
		cfg, err := src.Load(ctx)
		if err != nil || cfg.Plugin.Compression != "zstd" {
			t.Fatalf("load: %v", err)
		}
		if cfg, err := src.Reload(ctx); cfg != nil || err != nil {
			t.Fatalf("unchanged file: reload gave %v, %v; want nothing", cfg, err)
		}
		for _, e := range edits {
			put(e.doc)
			for range 2 { // a broken file fails every time, not once
				cfg, err := src.Reload(ctx)
				if e.want == "" {
					if err == nil || !strings.Contains(err.Error(), e.wantErr) {
						t.Fatalf("%s: reload gave %v, %v; want an error naming %s", e.name, cfg, err, e.wantErr)
					}
					continue
				}
				if err != nil || cfg == nil || string(cfg.Plugin.Compression) != e.want {
					t.Fatalf("%s: reload gave %+v, %v; want compression %q", e.name, cfg, err, e.want)
				}
				if again, err := src.Reload(ctx); again != nil || err != nil {
					t.Fatalf("%s: a second reload gave %v, %v; want nothing", e.name, again, err)
				}
				break
			}
		}
	}

	t.Run("s3", func(t *testing.T) {
		srv := testenv.StartVersity(t)
		srv.CreateBucket(t, "configs")
		put := func(doc string) {
			if _, err := srv.Client(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("configs"), Key: aws.String("sink.toml"), Body: strings.NewReader(doc)}); err != nil {
				t.Fatal(err)
			}
		}
		put(sourcedTOML)
		env := map[string]string{"SINK_ENDPOINT": srv.Endpoint, "SINK_ACCESS_KEY_ID": srv.AccessKey, "SINK_SECRET_ACCESS_KEY": srv.SecretKey, "SINK_REGION": "us-east-1"}
		src := New("s3://configs/sink.toml", "", envOf(env))
		check(t, src, put)
		// Unchanged means one conditional request: the store answers 304, no body.
		if _, _, err := fetchS3Config(ctx, "s3://configs/sink.toml", src.version, envOf(env)); !errors.Is(err, errNotModified) {
			t.Fatalf("a GET with the last ETag in If-None-Match gave %v, want 304 Not Modified", err)
		}

		// A read that fails says nothing of the file: ErrUnchecked, for
		// the caller to go on with what it has. A file that is gone was read.
		endpoint := env["SINK_ENDPOINT"]
		env["SINK_ENDPOINT"] = "http://127.0.0.1:1"
		if cfg, err := src.Reload(ctx); cfg != nil || !errors.Is(err, ErrUnchecked) {
			t.Fatalf("unreachable store: reload gave %v, %v; want ErrUnchecked", cfg, err)
		}
		env["SINK_ENDPOINT"] = endpoint
		if _, err := srv.Client(t).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("configs"), Key: aws.String("sink.toml")}); err != nil {
			t.Fatal(err)
		}
		if cfg, err := src.Reload(ctx); cfg != nil || err == nil || errors.Is(err, ErrUnchecked) || !strings.Contains(err.Error(), "s3://configs/sink.toml") {
			t.Fatalf("deleted file: reload gave %v, %v; want an error naming it", cfg, err)
		}
	})
	t.Run("ssm", func(t *testing.T) {
		client := motoSSM(t)
		put := func(doc string) {
			if _, err := client.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/iggy/sink"), Value: aws.String(doc),
				Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
				t.Fatal(err)
			}
		}
		put(sourcedTOML)
		check(t, New("ssm:/iggy/sink", "", envOf(map[string]string{"SINK_BUCKET": "b"})), put)
	})
	t.Run("bundled", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "sink.toml")
		if err := os.WriteFile(path, []byte(sourcedTOML), 0o644); err != nil {
			t.Fatal(err)
		}
		src := New("sink.toml", dir, envOf(nil))
		if _, err := src.Load(ctx); err != nil {
			t.Fatal(err)
		}
		// A file in the function's package cannot change: nothing to read.
		if cfg, err := src.Reload(ctx); cfg != nil || err != nil {
			t.Fatalf("bundled file: reload gave %v, %v", cfg, err)
		}
	})
}
