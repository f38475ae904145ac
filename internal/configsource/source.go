package configsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/s3store"
)

// configFetchTimeout bounds reading a configuration file from S3 or SSM.
const configFetchTimeout = 30 * time.Second

// maxConfigSize is the largest configuration file read from S3 (SSM's
// advanced parameters hold 8 KB).
const maxConfigSize = 1 << 20

// Load loads the configuration as both binaries do: the TOML file
// named by ref, then the environment over it. ref is a file path (relative
// paths are taken from base when it is set: the Lambda's package
// directory), s3://bucket/key, or ssm:/parameter-name (a String or
// SecureString parameter); "" means no file. env is usually os.LookupEnv.
func Load(ctx context.Context, ref, base string, env func(string) (string, bool)) (*config.Config, error) {
	return New(ref, base, env).Load(ctx)
}

// Source is where the configuration comes from, remembered so that
// a file in S3 or SSM can be read again when it changes: a warm Lambda
// container must not keep running an edited configuration's old version.
type Source struct {
	ref, base string
	env       func(string) (string, bool)
	// version identifies the file last loaded: its S3 ETag or its SSM
	// parameter version ("" for a local file, which is not read again).
	version string
}

// New names the configuration as Load does.
func New(ref, base string, env func(string) (string, bool)) *Source {
	return &Source{ref: strings.TrimSpace(ref), base: base, env: env}
}

// Load reads the file (if any) and the environment.
func (c *Source) Load(ctx context.Context) (*config.Config, error) {
	cfg, _, err := c.load(ctx, "")
	return cfg, err
}

// Reload reads the configuration again when its file in S3 or SSM changed
// since the last Load or Reload that succeeded, with one request: a
// conditional GET (If-None-Match: the ETag) or the parameter's version. It
// returns (nil, nil) when nothing changed or the file cannot change (a local
// or bundled file, or none). A changed file that no longer loads is an
// error every time, until it is mended: the old configuration is never kept
// in silence. A failed request (throttled, timed out, denied) is an error
// that wraps ErrUnchecked: whether the file changed is not known.
func (c *Source) Reload(ctx context.Context) (*config.Config, error) {
	if !c.remote() {
		return nil, nil
	}
	cfg, changed, err := c.load(ctx, c.version)
	if err != nil || !changed {
		return nil, err
	}
	return cfg, nil
}

// unchecked marks a failed read of the file, as opposed to a file that was
// read and does not load.
func unchecked(err error) error {
	var apiErr smithy.APIError
	if err == nil || errors.As(err, &apiErr) && (apiErr.ErrorCode() == "NoSuchKey" || apiErr.ErrorCode() == "ParameterNotFound") {
		return err // a file that is gone was read: it no longer loads
	}
	return fmt.Errorf("%w: %w", ErrUnchecked, err)
}

// Ref is the configuration's location as given ("" = no file).
func (c *Source) Ref() string { return c.ref }

func (c *Source) remote() bool {
	return strings.HasPrefix(c.ref, "s3://") || strings.HasPrefix(c.ref, "ssm:")
}

// load reads the configuration unless its version is still known.
func (c *Source) load(ctx context.Context, known string) (*config.Config, bool, error) {
	ref, env := c.ref, c.env
	var (
		data    []byte
		version string
		err     error
	)
	switch {
	case ref == "":
		cfg, err := config.Load("", env)
		return cfg, true, err
	case strings.HasPrefix(ref, "s3://"):
		data, version, err = fetchS3Config(ctx, ref, known, env)
	case strings.HasPrefix(ref, "ssm:"):
		data, version, err = fetchSSMConfig(ctx, ref, env)
	default:
		path := ref
		if c.base != "" && !filepath.IsAbs(path) {
			path = filepath.Join(c.base, path)
		}
		if _, err := os.Stat(path); err != nil && c.base != "" {
			return nil, false, fmt.Errorf("config: configuration file %q (SINK_CONFIG) is not in the function's package: build with CONFIG_FILE=%s sam build so that it is bundled, or use s3://bucket/key or ssm:/name: %w", ref, ref, err)
		}
		cfg, err := config.Load(path, env)
		return cfg, true, err
	}
	if errors.Is(err, errNotModified) || (err == nil && known != "" && version == known) {
		return nil, false, nil
	}
	if err != nil {
		if known != "" {
			err = unchecked(err)
		}
		return nil, false, err
	}
	cfg, err := config.LoadBytes(data, ref, env)
	if err != nil {
		return nil, false, err
	}
	c.version = version
	return cfg, true, nil
}

// errNotModified is a conditional read's answer that the file is unchanged.
var errNotModified = errors.New("configuration not modified")

// ErrUnchecked is a Reload that could not read the file: the caller
// decides whether to go on with the configuration it has.
var ErrUnchecked = errors.New("could not check the configuration file for changes")

// fetchS3Config reads s3://bucket/key with the default AWS credentials and
// region, or the sink's own S3 settings from the environment when they are
// set (SINK_ENDPOINT, SINK_ACCESS_KEY_ID / SINK_SECRET_ACCESS_KEY,
// SINK_REGION): the file often lives in the store the sink writes to.
func fetchS3Config(ctx context.Context, ref, etag string, env func(string) (string, bool)) ([]byte, string, error) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(ref, "s3://"), "/")
	if bucket == "" || key == "" {
		return nil, "", fmt.Errorf("config: SINK_CONFIG %q: want s3://bucket/key", ref)
	}
	get := func(name string) string { v, _ := env(name); return strings.TrimSpace(v) }
	region := get("SINK_REGION")
	if region == "" {
		region = firstNonEmpty(get("AWS_REGION"), get("AWS_DEFAULT_REGION"))
	}
	client, err := s3store.NewClient(ctx, s3store.ClientOptions{
		Region: region, Endpoint: get("SINK_ENDPOINT"),
		AccessKeyID: get("SINK_ACCESS_KEY_ID"), SecretAccessKey: get("SINK_SECRET_ACCESS_KEY"),
	})
	if err != nil {
		return nil, "", fmt.Errorf("config: read %s: %w", ref, err)
	}
	ctx, cancel := context.WithTimeout(ctx, configFetchTimeout)
	defer cancel()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if etag != "" {
		in.IfNoneMatch = aws.String(etag)
	}
	out, err := client.GetObject(ctx, in)
	var re interface{ HTTPStatusCode() int }
	if err != nil && errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotModified {
		return nil, etag, errNotModified
	}
	if err != nil {
		return nil, "", fmt.Errorf("config: read configuration file %s (SINK_CONFIG): %w", ref, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, maxConfigSize+1))
	if err != nil {
		return nil, "", fmt.Errorf("config: read configuration file %s (SINK_CONFIG): %w", ref, err)
	}
	if len(data) > maxConfigSize {
		return nil, "", fmt.Errorf("config: configuration file %s (SINK_CONFIG) is larger than %d bytes", ref, maxConfigSize)
	}
	return data, aws.ToString(out.ETag), nil
}

// fetchSSMConfig reads ssm:/name (decrypted when it is a SecureString) and
// its version.
func fetchSSMConfig(ctx context.Context, ref string, env func(string) (string, bool)) ([]byte, string, error) {
	name := strings.TrimPrefix(ref, "ssm:")
	if name == "" || name == "/" {
		return nil, "", fmt.Errorf("config: SINK_CONFIG %q: want ssm:/parameter-name", ref)
	}
	region := ""
	if v, ok := env("AWS_REGION"); ok {
		region = strings.TrimSpace(v)
	}
	opts := []func(*awsconfig.LoadOptions) error{}
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	ctx, cancel := context.WithTimeout(ctx, configFetchTimeout)
	defer cancel()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("config: read %s: aws configuration: %w", ref, err)
	}
	out, err := ssm.NewFromConfig(awsCfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, "", fmt.Errorf("config: read configuration parameter %s (SINK_CONFIG): %w", ref, err)
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return nil, "", fmt.Errorf("config: configuration parameter %s (SINK_CONFIG) has no value", ref)
	}
	return []byte(*out.Parameter.Value), strconv.FormatInt(out.Parameter.Version, 10), nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
