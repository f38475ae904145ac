package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/iggy-s3-sink/iggy-s3-sink/internal/keys"
)

// Lister lists object keys under a prefix (*s3store.Uploader).
type Lister interface {
	List(ctx context.Context, prefix string, fn func(key string, size int64) error) error
}

// Partition is one partition to check, with the consumer group's committed
// offset (nil when the group has stored none) and, when it was read, the
// sink's state for it.
type Partition struct {
	Stream, Topic string
	Partition     uint32
	Committed     *uint64
	State         *State
}

// State is what the sink's state table records for a partition.
type State struct {
	// Generation is the incarnation the state is at; the state is checked
	// against that generation's objects only.
	Generation uint32
	// Written is the last offset recorded as durably written (nil: none).
	Written *uint64
	// IntentFirst..IntentLast is an unfinished object, when HasIntent.
	HasIntent               bool
	IntentFirst, IntentLast uint64
}

// Range is one object, or one gap marker, of a partition.
type Range struct {
	First, Last uint64
	Key         string
	// Gap is set for a gap marker; Hole too for a hole marker (offsets
	// Iggy never had: its offsets skip them, so no message is missing);
	// Skip too for a skip marker (offsets the group was moved past);
	// TooLarge too for a too-large marker (a message over max_poll_bytes).
	Gap, Hole, Skip, TooLarge bool
	// Unit is set for a unit's manifest: the range's object under a path
	// template with payload fields, whose value objects hold its records
	// (Size is theirs together once the manifest is checked).
	Unit bool
	Size int64
	// Files are a checked unit's value objects, in key order.
	Files []string
	// Generation is the partition's incarnation (0 until it is re-created).
	Generation uint32
}

// Report is the verdict for one partition, or for one generation of a
// partition that was deleted and re-created.
type Report struct {
	Stream     string `json:"stream"`
	Topic      string `json:"topic"`
	Partition  uint32 `json:"partition"`
	Generation uint32 `json:"generation,omitempty"`
	// Retired is set for a generation the partition left behind when it was
	// re-created: it is complete as it is, and the group's offset is not its.
	Retired bool `json:"retired,omitempty"`
	// Voided counts objects whose keys were fenced off (void markers).
	Voided int `json:"voided,omitempty"`
	// ErrorObjects counts the error objects (invalid_payload =
	// "error_object"): records of a data object that could not be written
	// to it. Their offsets are covered by that data object's range.
	ErrorObjects int `json:"error_objects,omitempty"`
	Objects      int `json:"objects"`
	GapMarkers   int `json:"gap_markers"`
	// IggyHoles counts the hole markers among them: offsets Iggy never
	// had (its offsets skip them, e.g. after a 0.10 server recovery), so no
	// message is missing there.
	IggyHoles int `json:"iggy_holes,omitempty"`
	// Skipped counts the skip markers among them: offsets passed over
	// because the consumer group's offset was moved past them (by an
	// operator) before the sink archived them.
	Skipped int `json:"skipped,omitempty"`
	// TooLarge counts the too-large markers among them: messages larger
	// than max_poll_bytes, reported with their offsets instead of archived.
	TooLarge  int     `json:"too_large,omitempty"`
	Messages  uint64  `json:"messages"`
	Bytes     int64   `json:"bytes"`
	First     *uint64 `json:"first,omitempty"`
	Last      *uint64 `json:"last,omitempty"`
	Committed *uint64 `json:"committed,omitempty"`
	// StateWritten is the state's last written offset, when the state was
	// read and is at this generation.
	StateWritten *uint64  `json:"state_written,omitempty"`
	Overlaps     []string `json:"overlaps,omitempty"`
	Gaps         []string `json:"unreported_gaps,omitempty"`
	// ErrorViolations are error objects whose records are archived twice
	// (their data key was voided and the range read again).
	ErrorViolations []string `json:"error_violations,omitempty"`
	// ValueViolations are value objects (path templates with payload
	// fields) that break their unit's manifest: listed but missing or
	// changed, or there but listed by no manifest of their range.
	ValueViolations []string `json:"value_violations,omitempty"`
	// Notes are findings that are not violations, e.g. objects written
	// beyond the committed offset by a run that died before committing.
	Notes []string `json:"notes,omitempty"`
	// Ranges are the objects in offset order.
	Ranges []Range `json:"-"`
}

// OK reports whether the partition holds the guarantee.
func (r *Report) OK() bool {
	return len(r.Overlaps) == 0 && len(r.Gaps) == 0 && len(r.ErrorViolations) == 0 && len(r.ValueViolations) == 0
}

// Progress is how far a Check has come, for a progress line on long
// listings.
type Progress struct {
	// Index is the partition being listed (0-based) of Partitions: the
	// first of those the listing serves, when it serves several (Sharing).
	Index, Partitions int
	Stream, Topic     string
	Partition         uint32
	// Sharing counts the partitions this listing serves: those whose keys
	// share its prefix, e.g. every topic's under a time-first template.
	Sharing int
	// Listed counts the keys listed for this partition so far, Total for
	// the whole check.
	Listed, Total int
	// Done is set once this partition's listing is complete.
	Done bool
}

// ProgressEvery is how many keys pass between two progress calls (one
// S3 listing page).
const ProgressEvery = 1000

// Options are a Check's choices.
type Options struct {
	// Progress, when set, is called every ProgressEvery keys and at the end
	// of each partition's listing.
	Progress func(Progress)
}

// Check lists every partition's objects and checks them, one report per
// generation (the newest one is held to the group's committed offset).
func Check(ctx context.Context, l Lister, names *keys.Namer, parts []Partition) ([]Report, error) {
	return CheckWith(ctx, l, names, parts, Options{})
}

// listed is what the listings found of one partition.
type listed struct {
	ranges []Range
	voided map[string]bool
	errs   map[uint32][]Range
	// values are the value objects listed (payload fields), by key.
	values map[string]Range
}

// CheckWith is Check with options. Partitions whose keys share a listing
// prefix (a template without {partition}, or with a time field before
// {stream} or {topic}) are listed once for all of them.
func CheckWith(ctx context.Context, l Lister, names *keys.Namer, parts []Partition, o Options) ([]Report, error) {
	found := make([]listed, len(parts))
	for i := range found {
		found[i].voided, found[i].values = map[string]bool{}, map[string]Range{}
	}
	total := 0
	data := groupByPrefix(names, parts, func(pn keys.PartitionNamer) (string, func(string) bool, bool) {
		return pn.ListPrefix(), pn.Matcher(), true
	})
	for _, g := range data {
		i := g.members[0]
		pr := Progress{Index: i, Partitions: len(parts), Stream: parts[i].Stream, Topic: parts[i].Topic, Partition: parts[i].Partition, Sharing: len(g.members)}
		err := l.List(ctx, g.prefix, func(key string, size int64) error {
			pr.Listed++
			if o.Progress != nil && pr.Listed%ProgressEvery == 0 {
				pr.Total = total + pr.Listed
				o.Progress(pr)
			}
			n, ok := keys.ParseName(key)
			if !ok {
				return nil
			}
			for _, j := range g.whose(n.Partition, key) { // another topic's, under a time-first template, are not
				f := &found[j]
				if n.Void {
					if k, ok := keys.Voided(key); ok {
						f.voided[k] = true
					}
					continue
				}
				r := Range{First: n.First, Last: n.Last, Key: key, Gap: n.Gap, Hole: n.Hole, Skip: n.Skip, TooLarge: n.TooLarge, Unit: n.Manifest, Size: size, Generation: n.Generation}
				switch {
				case n.Manifest && !names.HasValues():
					// Another configuration's unit (the audit of that
					// configuration reads it).
				case names.HasValues() && !n.Gap:
					if r.Unit {
						f.ranges = append(f.ranges, r)
					} else {
						f.values[key] = r
					}
				default:
					f.ranges = append(f.ranges, r)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("audit: list %q: %w", g.prefix, err)
		}
		total += pr.Listed
		if o.Progress != nil {
			pr.Total, pr.Done = total, true
			o.Progress(pr)
		}
	}
	if err := listErrors(ctx, l, names, parts, found); err != nil {
		return nil, err
	}
	reports := make([]Report, 0, len(parts))
	for i, p := range parts {
		f := found[i]
		var units unitCheck
		if names.HasValues() {
			var err error
			if units, err = checkUnits(ctx, l, p, &f); err != nil {
				return nil, err
			}
		}
		reps := verifyGenerations(p, f.ranges, f.voided)
		units.report(reps)
		voidedErrs := map[string]bool{} // the error keys of voided data keys
		for k := range f.voided {
			if ek, ok := names.ErrorsKeyOf(k); ok {
				voidedErrs[ek] = true
			}
		}
		for i := range reps {
			checkErrors(&reps[i], f.errs[reps[i].Generation], voidedErrs)
		}
		reports = append(reports, reps...)
	}
	return reports, nil
}

// prefixGroup is the partitions one listing serves, in the order given.
type prefixGroup struct {
	prefix  string
	members []int
	holds   []func(key string) bool // members' matchers, by position
	parts   []uint32                // members' partition numbers, by position
}

// whose returns the members a listed key of partition number part belongs to.
func (g *prefixGroup) whose(part uint32, key string) []int {
	var out []int
	for m, j := range g.members {
		if g.parts[m] == part && g.holds[m](key) {
			out = append(out, j)
		}
	}
	return out
}

// groupByPrefix groups parts by the listing prefix of their keys; of says
// where a partition's keys are listed and which are its own (false: it has
// none to list).
func groupByPrefix(names *keys.Namer, parts []Partition, of func(keys.PartitionNamer) (string, func(string) bool, bool)) []*prefixGroup {
	var groups []*prefixGroup
	byPrefix := map[string]*prefixGroup{}
	for i, p := range parts {
		prefix, holds, ok := of(names.Partition(p.Stream, p.Topic, p.Partition))
		if !ok {
			continue
		}
		g := byPrefix[prefix]
		if g == nil {
			g = &prefixGroup{prefix: prefix}
			byPrefix[prefix] = g
			groups = append(groups, g)
		}
		g.members, g.holds, g.parts = append(g.members, i), append(g.holds, holds), append(g.parts, p.Partition)
	}
	return groups
}

// listErrors lists the partitions' error objects by generation into found.
func listErrors(ctx context.Context, l Lister, names *keys.Namer, parts []Partition, found []listed) error {
	groups := groupByPrefix(names, parts, func(pn keys.PartitionNamer) (string, func(string) bool, bool) {
		lp, ok := pn.ErrorsListPrefix()
		return lp, pn.ErrorsMatcher(), ok
	})
	for _, g := range groups {
		err := l.List(ctx, g.prefix, func(key string, size int64) error {
			n, ok := keys.ParseErrorsName(key)
			if !ok {
				return nil
			}
			for _, j := range g.whose(n.Partition, key) {
				if found[j].errs == nil {
					found[j].errs = map[uint32][]Range{}
				}
				found[j].errs[n.Generation] = append(found[j].errs[n.Generation], Range{First: n.First, Last: n.Last, Key: key, Size: size, Generation: n.Generation})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("audit: list %q: %w", g.prefix, err)
		}
	}
	return nil
}

// checkErrors counts a generation's error objects; one whose range is no
// data object's is noted (its records' offsets are not in that object).
// One whose data key was voided fails the audit: the range was read again,
// so its records are in the range's next error objects too. An empty one
// there is the void's fence of the error key, no error object.
func checkErrors(rep *Report, errs []Range, voided map[string]bool) {
	data := map[[2]uint64]bool{}
	for _, r := range rep.Ranges {
		if !r.Gap {
			data[[2]uint64{r.First, r.Last}] = true
		}
	}
	for _, e := range errs {
		rng := [2]uint64{e.First, e.Last}
		switch {
		case voided[e.Key] && e.Size == 0:
			continue // the fence
		case voided[e.Key]:
			rep.ErrorViolations = append(rep.ErrorViolations, fmt.Sprintf("error object %s (%d..%d) belongs to a voided data key: its records were archived again with the range's next objects", e.Key, e.First, e.Last))
		case !data[rng]:
			rep.Notes = append(rep.Notes, fmt.Sprintf("error object %s (%d..%d) has no data object of the same range", e.Key, e.First, e.Last))
		}
		rep.ErrorObjects++
	}
}

// verifyGenerations splits a partition's ranges by generation and checks
// each; voided objects cover nothing.
func verifyGenerations(p Partition, ranges []Range, voided map[string]bool) []Report {
	byGen := map[uint32][]Range{}
	var newest uint32
	nvoid := map[uint32]int{}
	for _, r := range ranges {
		if voided[r.Key] {
			nvoid[r.Generation]++
			continue
		}
		byGen[r.Generation] = append(byGen[r.Generation], r)
		newest = max(newest, r.Generation)
	}
	var out []Report
	for g := uint32(0); g <= newest; g++ {
		rs, ok := byGen[g]
		if !ok && g != newest {
			continue
		}
		q := p
		if g != newest {
			q.Committed = nil
		}
		rep := Verify(q, rs)
		rep.Generation, rep.Retired, rep.Voided = g, g != newest, nvoid[g]
		if rep.Retired {
			rep.Notes = nil // no committed offset belongs to a retired generation
		}
		if st := p.State; st != nil && st.Generation == g {
			verifyState(&rep, st)
		}
		out = append(out, rep)
	}
	if st := p.State; st != nil && st.Generation > newest && len(out) > 0 {
		last := &out[len(out)-1]
		last.Notes = append(last.Notes, fmt.Sprintf("the state is at generation %d, which has no objects yet (the partition was re-created)", st.Generation))
	}
	return out
}

// verifyState holds a generation's objects to the state: every offset the
// state records as written must be in an object or a gap marker; objects
// beyond it are an unfinished intent (noted) or written outside the
// protocol (noted too: they are not a gap).
func verifyState(rep *Report, st *State) {
	if st.Written == nil {
		if rep.Last != nil && !st.HasIntent {
			rep.Notes = append(rep.Notes, fmt.Sprintf("objects up to offset %d but the state records nothing written", *rep.Last))
		}
		return
	}
	w := *st.Written
	rep.StateWritten = &w
	switch {
	case rep.Last == nil:
		rep.Gaps = append(rep.Gaps, fmt.Sprintf("the state records offsets up to %d written but there are no objects", w))
	case w > *rep.Last:
		rep.Gaps = append(rep.Gaps, fmt.Sprintf("offsets %d..%d: recorded written in the state but in no object", *rep.Last+1, w))
	case w < *rep.Last && st.HasIntent && st.IntentFirst == w+1 && st.IntentLast >= *rep.Last:
		rep.Notes = append(rep.Notes, fmt.Sprintf("objects up to offset %d belong to the unfinished intent %d..%d (the next run finishes it)", *rep.Last, st.IntentFirst, st.IntentLast))
	case w < *rep.Last:
		rep.Notes = append(rep.Notes, fmt.Sprintf("objects up to offset %d are beyond the state's last written offset %d", *rep.Last, w))
	}
}

// Verify checks one partition's ranges (in any order).
func Verify(p Partition, ranges []Range) Report {
	rep := Report{Stream: p.Stream, Topic: p.Topic, Partition: p.Partition, Committed: p.Committed}
	sort.Slice(ranges, func(i, j int) bool {
		if ranges[i].First != ranges[j].First {
			return ranges[i].First < ranges[j].First
		}
		return ranges[i].Last < ranges[j].Last
	})
	rep.Ranges = ranges
	var prev *Range
	for i := range ranges {
		r := &ranges[i]
		if r.Gap {
			rep.GapMarkers++
			if r.Hole {
				rep.IggyHoles++
			}
			if r.Skip {
				rep.Skipped++
			}
			if r.TooLarge {
				rep.TooLarge++
			}
		} else {
			rep.Objects++
			rep.Messages += r.Last - r.First + 1
			rep.Bytes += r.Size
		}
		if r.Last < r.First {
			rep.Overlaps = append(rep.Overlaps, fmt.Sprintf("%s: last offset %d before first %d", r.Key, r.Last, r.First))
			continue
		}
		if prev != nil {
			switch {
			case r.First <= prev.Last:
				rep.Overlaps = append(rep.Overlaps, fmt.Sprintf("%s (%d..%d) overlaps %s (%d..%d)", r.Key, r.First, r.Last, prev.Key, prev.First, prev.Last))
			case r.First > prev.Last+1:
				rep.Gaps = append(rep.Gaps, fmt.Sprintf("offsets %d..%d: in no object and no gap marker", prev.Last+1, r.First-1))
			}
		}
		if prev == nil || r.Last > prev.Last {
			prev = r
		}
	}
	if prev != nil {
		f, l := ranges[0].First, prev.Last
		rep.First, rep.Last = &f, &l
		// Every generation is archived from offset 0 on; what came before
		// the first object is a marker's to say (retention, a group moved
		// past, a rename), so a range that starts later with none is a
		// gap like any other (issue 21, item 11).
		if f > 0 {
			rep.Gaps = append(rep.Gaps, fmt.Sprintf("offsets 0..%d: before the first object (%s), in no object and no gap marker", f-1, ranges[0].Key))
		}
	}
	switch {
	case p.Committed == nil && prev != nil:
		rep.Notes = append(rep.Notes, fmt.Sprintf("objects up to offset %d but the group has no committed offset yet (the next run commits it)", prev.Last))
	case p.Committed != nil && prev == nil:
		rep.Gaps = append(rep.Gaps, fmt.Sprintf("the group committed offset %d but there are no objects", *p.Committed))
	case p.Committed != nil && *p.Committed > prev.Last:
		rep.Gaps = append(rep.Gaps, fmt.Sprintf("offsets %d..%d: committed by the group but in no object", prev.Last+1, *p.Committed))
	case p.Committed != nil && *p.Committed < prev.Last:
		rep.Notes = append(rep.Notes, fmt.Sprintf("objects up to offset %d are ahead of the committed offset %d (a run died before committing; the next run commits them)", prev.Last, *p.Committed))
	}
	return rep
}

// Write prints a per-partition report.
func Write(w io.Writer, reports []Report) error {
	for _, r := range reports {
		verdict := "ok"
		if !r.OK() {
			verdict = "FAIL"
		}
		span := "no objects"
		if r.First != nil {
			span = fmt.Sprintf("offsets %d..%d", *r.First, *r.Last)
		}
		committed := "none"
		if r.Committed != nil {
			committed = fmt.Sprint(*r.Committed)
		}
		part := fmt.Sprintf("%s/%s partition %d", r.Stream, r.Topic, r.Partition)
		if r.Generation > 0 || r.Retired {
			part += fmt.Sprintf(" generation %d", r.Generation)
		}
		if r.Retired {
			committed = "- (retired: the partition was re-created)"
		}
		markers := fmt.Sprintf("%d gap markers", r.GapMarkers)
		if r.IggyHoles > 0 {
			markers += fmt.Sprintf(" (%d of them holes in Iggy's offsets, no message missing)", r.IggyHoles)
		}
		if r.Skipped > 0 {
			markers += fmt.Sprintf(" (%d of them offsets the consumer group was moved past)", r.Skipped)
		}
		if r.TooLarge > 0 {
			markers += fmt.Sprintf(" (%d of them messages larger than max_poll_bytes)", r.TooLarge)
		}
		if _, err := fmt.Fprintf(w, "%-4s %s: %d objects, %d messages, %d bytes, %s, %s, committed %s\n",
			verdict, part, r.Objects, r.Messages, r.Bytes, span, markers, committed); err != nil {
			return err
		}
		if r.Voided > 0 {
			fmt.Fprintf(w, "     note: %d voided object keys (void markers; they cover no offsets)\n", r.Voided)
		}
		if r.ErrorObjects > 0 {
			fmt.Fprintf(w, "     note: %d error objects (records that could not be written; their offsets are in their data objects' ranges)\n", r.ErrorObjects)
		}
		for _, s := range r.Overlaps {
			fmt.Fprintf(w, "     overlap: %s\n", s)
		}
		for _, s := range r.Gaps {
			fmt.Fprintf(w, "     gap: %s\n", s)
		}
		for _, s := range r.ValueViolations {
			fmt.Fprintf(w, "     value object: %s\n", s)
		}
		for _, s := range r.ErrorViolations {
			fmt.Fprintf(w, "     error object: %s\n", s)
		}
		for _, s := range r.Notes {
			fmt.Fprintf(w, "     note: %s\n", s)
		}
	}
	return nil
}

// Verdict is a whole audit as JSON: whether every partition holds the
// guarantee, the violation counts and the per-partition reports.
type Verdict struct {
	OK         bool     `json:"ok"`
	Partitions int      `json:"partitions"`
	Objects    int      `json:"objects"`
	GapMarkers int      `json:"gap_markers"`
	IggyHoles  int      `json:"iggy_holes,omitempty"`
	Skipped    int      `json:"skipped,omitempty"`
	TooLarge   int      `json:"too_large,omitempty"`
	Overlaps   int      `json:"overlaps"`
	Gaps       int      `json:"unreported_gaps"`
	Reports    []Report `json:"reports"`
	// Tables are the Iceberg tables' verdicts (table_format = "iceberg").
	Tables []TableReport `json:"tables,omitempty"`
}

// Summarize totals the reports.
func Summarize(reports []Report) Verdict {
	v := Verdict{OK: true, Reports: reports}
	if v.Reports == nil {
		v.Reports = []Report{}
	}
	seen := map[[3]any]bool{}
	for _, r := range reports {
		k := [3]any{r.Stream, r.Topic, r.Partition}
		if !seen[k] {
			seen[k] = true
			v.Partitions++
		}
		v.Objects += r.Objects
		v.GapMarkers += r.GapMarkers
		v.IggyHoles += r.IggyHoles
		v.Skipped += r.Skipped
		v.TooLarge += r.TooLarge
		v.Overlaps += len(r.Overlaps)
		v.Gaps += len(r.Gaps)
		v.OK = v.OK && r.OK()
	}
	return v
}

// WriteJSON prints the verdict as one indented JSON document.
func WriteJSON(w io.Writer, reports []Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Summarize(reports))
}

// TableReport is the verdict for one Iceberg table (table_format =
// "iceberg"): every offset the archived data objects within the table's
// registered ranges hold is in it once, and it holds no other row, whether
// a data file is an object itself or a maintenance rewrite of objects'
// rows (a compaction).
type TableReport struct {
	Table string `json:"table"`
	// Files counts the table's data files; Partitions the partitions it
	// records a registered range for.
	Files      int `json:"files"`
	Partitions int `json:"partitions"`
	// Missing are archived objects, or offsets of one, within a registered
	// range that the table lacks; Twice are data files the table holds more
	// than once, and offsets it holds more than once (with the files they
	// are in); Outside are data files, or rows of one, that are no archived
	// offset within a registered range.
	Missing []string `json:"missing,omitempty"`
	Twice   []string `json:"twice,omitempty"`
	Outside []string `json:"outside,omitempty"`
	// Misplaced are data files whose rows do not all hold the value of
	// the partition they are registered in, for a payload field the table
	// is partitioned by (by the file's own column bounds).
	Misplaced []string `json:"misplaced,omitempty"`
	// Notes are findings that are not violations (a table behind the
	// archive: the next run registers the rest).
	Notes []string `json:"notes,omitempty"`
}

// OK reports whether the table holds the guarantee.
func (t *TableReport) OK() bool {
	return len(t.Missing)+len(t.Twice)+len(t.Outside)+len(t.Misplaced) == 0
}

// WriteTables prints one line per table, then its findings.
func WriteTables(w io.Writer, tables []TableReport) error {
	for _, t := range tables {
		verdict := "ok"
		if !t.OK() {
			verdict = "FAIL"
		}
		if _, err := fmt.Fprintf(w, "%-4s table %s: %d data files, %d partitions registered\n", verdict, t.Table, t.Files, t.Partitions); err != nil {
			return err
		}
		for _, s := range t.Missing {
			fmt.Fprintf(w, "     missing from the table: %s\n", s)
		}
		for _, s := range t.Twice {
			fmt.Fprintf(w, "     registered twice: %s\n", s)
		}
		for _, s := range t.Outside {
			fmt.Fprintf(w, "     not archived rows in a registered range: %s\n", s)
		}
		for _, s := range t.Misplaced {
			fmt.Fprintf(w, "     in the wrong partition: %s\n", s)
		}
		for _, s := range t.Notes {
			fmt.Fprintf(w, "     note: %s\n", s)
		}
	}
	return nil
}

// WriteJSONWith is WriteJSON with the tables' verdicts in Verdict.Tables
// (and in OK).
func WriteJSONWith(w io.Writer, reports []Report, tables []TableReport) error {
	v := Summarize(reports)
	v.Tables = tables
	for _, t := range tables {
		v.OK = v.OK && t.OK()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
