package app

import (
	"errors"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/config"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// ErrNoIceberg is the error of a sink built without Iceberg (go build
// -tags noiceberg: the Lambda's lean bootstrap) given table_format =
// "iceberg": such a process hands over to the full build (see
// internal/handover) and reports this only when there is none.
var ErrNoIceberg = errors.New("this build of the sink has no Iceberg support (built with -tags noiceberg, as the Lambda's bootstrap is): the full build must sit beside it, named as it is plus " + IcebergBuildSuffix + " (bootstrap" + IcebergBuildSuffix + "; make build-SinkFunction packages both)")

// IcebergBuildSuffix names the full build beside a lean one: bootstrap's is
// bootstrap-iceberg, poller's poller-iceberg.
const IcebergBuildSuffix = "-iceberg"

// NeedsIceberg tells whether cfg registers its objects in Iceberg tables,
// which only a build with Iceberg (HasIceberg) can do.
func NeedsIceberg(cfg *config.Config) bool { return cfg.Plugin.Tables() }

// tableCut is the time partition of the sink's tables, which no object
// spans: the path template's finest calendar field, coarsened to the hour
// Iceberg partitions by at the finest; NoCut without tables, without
// calendar fields, or without the timestamp column (include_metadata off).
func tableCut(cfg *config.Config) batch.Cut {
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
