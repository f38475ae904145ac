package sinktables

import (
	"errors"

	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// ErrNoIceberg is the error of a sink built without Iceberg (go build
// -tags noiceberg: the Lambda's lean bootstrap) given table_format =
// "iceberg": such a process hands over to the full build (see
// internal/handover) and reports this only when there is none.
var ErrNoIceberg = errors.New("this build of the sink has no Iceberg support (built with -tags noiceberg, as the Lambda's bootstrap is): the full build must sit beside it, named as it is plus " + BuildSuffix + " (bootstrap" + BuildSuffix + "; make build-SinkFunction packages both)")

// BuildSuffix names the full build beside a lean one: bootstrap's is
// bootstrap-iceberg, poller's poller-iceberg.
const BuildSuffix = "-iceberg"

// Needs tells whether cfg registers its objects in Iceberg tables,
// which only a build with Iceberg (HasIceberg) can do.
func Needs(cfg *config.Config) bool { return cfg.Plugin.Tables() }

// Cut is the time partition of the sink's tables, which no object
// spans: the path template's finest calendar field, coarsened to the hour
// Iceberg partitions by at the finest; NoCut without tables, without
// calendar fields, or without the timestamp column (include_metadata off).
func Cut(cfg *config.Config) batch.Cut {
	p := &cfg.Plugin
	if !p.Tables() || !p.IncludeMetadata {
		return batch.NoCut
	}
	switch p.Template.Period() {
	case keys.PeriodMinute, keys.PeriodHour:
		return batch.CutHour
	case keys.PeriodDay:
		return batch.CutDay
	case keys.PeriodMonth:
		return batch.CutMonth
	case keys.PeriodYear:
		return batch.CutYear
	}
	return batch.NoCut
}

// Params are what the tables take of the sink.
type Params struct {
	Config     *config.Config
	AWS        aws.Config // the Glue and S3 Tables catalogs' clients
	S3Endpoint string     // the endpoint the sink's S3 client uses ("" for AWS's own)
	Catalog    Catalog    // replaces the catalog the configuration names (tests)
	Objects    audit.Lister
	Names      *keys.Namer
	Hooks      []drain.Hook // told what each registration did (Hook, metrics.EMF)
	Log        *slog.Logger
}
