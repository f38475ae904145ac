package icetable

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/catalog/rest"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
)

// CatalogKind names a kind of Iceberg catalog.
type CatalogKind string

// The catalogs OpenCatalog opens.
const (
	CatalogGlue     CatalogKind = "glue"
	CatalogS3Tables CatalogKind = "s3tables"
	CatalogREST     CatalogKind = "rest"
)

// CatalogOptions say which catalog to open and how to reach it.
type CatalogOptions struct {
	Kind CatalogKind
	// URI is the REST catalog's URL (s3tables: default
	// https://s3tables.<Region>.amazonaws.com/iceberg).
	URI string
	// Warehouse is the REST warehouse, or the S3 Tables bucket's ARN.
	Warehouse string
	Region    string
	// AWS is the configuration Glue and S3 Tables are called with (the
	// usual credential chain; AWS_ENDPOINT_URL_GLUE as the SDK reads it).
	AWS aws.Config
	// Files are the s3.* properties table files are read and written with.
	Files FileStore
	// ResponseTimeout bounds the wait for a REST reply's headers.
	ResponseTimeout time.Duration
}

// FileStore is how the table's files (data, manifests, metadata) are reached.
type FileStore struct {
	Endpoint                     string // "" for AWS
	Region                       string
	PathStyle                    bool
	AccessKeyID, SecretAccessKey string // "" for the usual credential chain
}

// Props renders the store as the FileIO's s3.* properties.
func (f FileStore) Props() iceberg.Properties {
	p := iceberg.Properties{}
	if f.Endpoint != "" {
		p[iceio.S3EndpointURL] = f.Endpoint
	}
	if f.Region != "" {
		p[iceio.S3Region] = f.Region
	}
	if f.PathStyle {
		p[iceio.S3ForceVirtualAddressing] = "false"
	}
	if f.AccessKeyID != "" && f.SecretAccessKey != "" {
		p[iceio.S3AccessKeyID], p[iceio.S3SecretAccessKey] = f.AccessKeyID, f.SecretAccessKey
	}
	return p
}

// OpenCatalog opens the catalog; a REST catalog is asked for its
// configuration here, so an unreachable one fails at start.
func OpenCatalog(ctx context.Context, o CatalogOptions) (Catalog, error) {
	props := o.Files.Props()
	switch o.Kind {
	case CatalogGlue:
		return glue.NewCatalog(glue.WithAwsConfig(o.AWS), glue.WithAwsProperties(glue.AwsProperties(props)))
	case CatalogREST, CatalogS3Tables:
		opts := []rest.Option{rest.WithAdditionalProps(props), rest.WithCustomTransport(transport(o.ResponseTimeout))}
		uri := o.URI
		if o.Kind == CatalogS3Tables {
			if uri == "" {
				uri = fmt.Sprintf("https://s3tables.%s.amazonaws.com/iceberg", o.Region)
			}
			opts = append(opts, rest.WithSigV4RegionSvc(o.Region, "s3tables"), rest.WithAwsConfig(o.AWS))
		}
		if o.Warehouse != "" {
			opts = append(opts, rest.WithWarehouseLocation(o.Warehouse))
		}
		c, err := rest.NewCatalog(ctx, "iggy-s3-sink", uri, opts...)
		if err != nil {
			return nil, fmt.Errorf("icetable: open the %s catalog at %s: %w", o.Kind, redactURL(uri), err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("icetable: unknown catalog %q (glue, s3tables or rest)", o.Kind)
}

// redactURL drops user information from a URL for messages.
func redactURL(u string) string {
	if at := strings.LastIndexByte(u, '@'); at >= 0 {
		if s := strings.Index(u, "://"); s >= 0 && s < at {
			return u[:s+3] + "…@" + u[at+1:]
		}
	}
	return u
}

func transport(responseTimeout time.Duration) http.RoundTripper {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: responseTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   4,
	}
}

// TableName renders a table name template: {stream} and {topic} become
// the names folded to a-z, 0-9 and _ (Glue and Athena fold case, and
// allow no other characters).
func TableName(template, stream, topic string) string {
	return strings.NewReplacer("{stream}", fold(stream), "{topic}", fold(topic)).Replace(template)
}

func fold(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
