//go:build noiceberg

package app

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
	"github.com/iggy-s3-sink/iggy-s3-sink/internal/drain"
)

// HasIceberg tells whether this build can register objects in Iceberg
// tables: false only when built with -tags noiceberg.
const HasIceberg = false

// TableCatalog is the Iceberg catalog Options.Catalog can replace; a build
// without Iceberg has none to replace.
type TableCatalog = any

// tableRegistrar is never set in a build without Iceberg.
type tableRegistrar = *struct{}

// openTables refuses table_format = "iceberg": this build cannot register
// tables, and archiving without registering would leave them behind.
func (s *Sink) openTables(_ context.Context, _ aws.Config, _ TableCatalog) error {
	if NeedsIceberg(s.Config) {
		return fmt.Errorf("table_format = \"iceberg\": %w", ErrNoIceberg)
	}
	return nil
}

func (s *Sink) runAndRegister(ctx context.Context, r *drain.Runner) (*drain.Summary, error) {
	return r.Run(ctx)
}

// AuditTables checks the Iceberg tables of the audited partitions: a build
// without Iceberg has none (openTables refused a configuration with them).
func (s *Sink) AuditTables(context.Context, []audit.Report) ([]audit.TableReport, error) {
	return nil, nil
}
