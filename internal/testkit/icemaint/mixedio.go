package icemaint

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// mixedIO reads and writes the table's files with the table's IO, and
// files of another scheme or bucket (data files a Hadoop catalog on a
// local warehouse registers in S3) with an IO of their own, as an
// engine's per-scheme file systems do.
type mixedIO struct {
	ctx   context.Context
	home  iceio.IO
	root  string // scheme://host of the table's location
	props iceberg.Properties

	mu     sync.Mutex
	others map[string]iceio.IO
}

func rootOf(path string) string {
	u, err := url.Parse(path)
	if err != nil || u.Scheme == "" {
		return "file://"
	}
	return u.Scheme + "://" + u.Host
}

func (m *mixedIO) route(name string) (iceio.IO, error) {
	r := rootOf(name)
	if r == m.root {
		return m.home, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if fs, ok := m.others[r]; ok {
		return fs, nil
	}
	fs, err := iceio.LoadFS(m.ctx, m.props, name)
	if err != nil {
		return nil, fmt.Errorf("icemaint: open the store of %s: %w", name, err)
	}
	m.others[r] = fs
	return fs, nil
}

func (m *mixedIO) Open(name string) (iceio.File, error) {
	fs, err := m.route(name)
	if err != nil {
		return nil, err
	}
	return fs.Open(name)
}

func (m *mixedIO) Remove(name string) error {
	fs, err := m.route(name)
	if err != nil {
		return err
	}
	return fs.Remove(name)
}

func (m *mixedIO) Create(name string) (iceio.FileWriter, error) {
	fs, err := m.route(name)
	if err != nil {
		return nil, err
	}
	w, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("icemaint: the store of %s cannot be written", name)
	}
	return w.Create(name)
}

func (m *mixedIO) WriteFile(name string, p []byte) error {
	fs, err := m.route(name)
	if err != nil {
		return err
	}
	w, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("icemaint: the store of %s cannot be written", name)
	}
	return w.WriteFile(name, p)
}

// withFiles returns tbl reading and writing through a mixedIO, for the
// compaction's reads and writes only (it commits nothing).
func withFiles(ctx context.Context, tbl *table.Table, props iceberg.Properties) (*table.Table, error) {
	home, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	m := &mixedIO{ctx: ctx, home: home, root: rootOf(tbl.Location()), props: props, others: map[string]iceio.IO{}}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), func(context.Context) (iceio.IO, error) { return m, nil }, nil), nil
}
