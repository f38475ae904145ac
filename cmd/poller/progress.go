package main

import (
	"fmt"
	"io"
	"time"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/audit"
)

// auditProgressEvery spaces the audit's progress lines: a listing shorter
// than this prints none.
const auditProgressEvery = 2 * time.Second

// auditProgress prints one line to stderr at most every `every` while an
// audit lists objects, so that a long listing shows it is alive.
type auditProgress struct {
	w     io.Writer
	now   func() time.Time
	every time.Duration
	last  time.Time
}

func newAuditProgress(w io.Writer, now func() time.Time, every time.Duration) *auditProgress {
	return &auditProgress{w: w, now: now, every: every, last: now()}
}

func (p *auditProgress) report(pr audit.Progress) {
	now := p.now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	state := "listing"
	if pr.Done {
		state = "listed"
	}
	shared := ""
	if pr.Sharing > 1 {
		shared = fmt.Sprintf(", a listing %d partitions share", pr.Sharing)
	}
	fmt.Fprintf(p.w, "audit: %d keys listed so far; %s %s/%s partition %d (%d of %d%s): %d keys\n",
		pr.Total, state, pr.Stream, pr.Topic, pr.Partition, pr.Index+1, pr.Partitions, shared, pr.Listed)
}
