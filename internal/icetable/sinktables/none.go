//go:build noiceberg

package sinktables

import (
	"context"
	"fmt"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/batch"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
)

// HasIceberg tells whether this build can register objects in Iceberg
// tables: false, built with -tags noiceberg.
const HasIceberg = false

// Catalog is the Iceberg catalog Params.Catalog can replace: none here.
type Catalog = any

// Tables is always nil in this build.
type Tables struct{}

// Open refuses table_format = "iceberg" with ErrNoIceberg.
func Open(_ context.Context, p Params, _ *batch.Options) (*Tables, error) {
	if Needs(p.Config) {
		return nil, fmt.Errorf("table_format = \"iceberg\": %w", ErrNoIceberg)
	}
	return nil, nil
}

// Run is one run.
func (t *Tables) Run(ctx context.Context, r *drain.Runner) (*drain.Summary, error) {
	return r.Run(ctx)
}

// Audit checks no tables.
func (t *Tables) Audit(context.Context, []audit.Report) ([]audit.TableReport, error) {
	return nil, nil
}
