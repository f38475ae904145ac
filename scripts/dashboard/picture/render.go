package picture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The grid: CloudWatch dashboards are 24 columns wide; a row unit is
// about a quarter of a column's width on screen.
const (
	columns  = 24
	colWidth = 40
	rowUnit  = 30
	margin   = 10
	caption  = 24  // the line above the grid
	inset    = 3   // the gap between neighbouring widgets
	charW    = 6.6 // a 12px character, on average
	titleW   = 7.8 // a bold 13px one
	lineStep = 17
)

// CloudWatch's default series colours, in order.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// Widget is one widget of a dashboard body, as far as the picture needs it.
type Widget struct {
	Type                string
	X, Y, Width, Height int
	Properties          struct {
		Title       string
		View        string
		Period      int
		Markdown    string
		Alarms      []string
		Metrics     [][]any
		Annotations struct {
			Horizontal []struct {
				Label string
				Value float64
			}
		}
	}
}

// Widgets parses a dashboard body.
func Widgets(body string) ([]Widget, error) {
	var b struct{ Widgets []Widget }
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("the dashboard body is not valid JSON: %w", err)
	}
	return b.Widgets, nil
}

// Render draws the dashboard body as an SVG document; heading is the line
// above the grid.
func Render(body, heading string) ([]byte, error) {
	widgets, err := Widgets(body)
	if err != nil {
		return nil, err
	}
	rows := 0
	for i, w := range widgets {
		if w.X < 0 || w.Y < 0 || w.Width <= 0 || w.Height <= 0 || w.X+w.Width > columns {
			return nil, fmt.Errorf("widget %d (%q) at x=%d y=%d width=%d height=%d lies outside the %d-column grid", i, w.Properties.Title, w.X, w.Y, w.Width, w.Height, columns)
		}
		rows = max(rows, w.Y+w.Height)
	}
	width := 2*margin + columns*colWidth
	height := 2*margin + caption + rows*rowUnit

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Arial, Helvetica, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#f2f3f3"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" fill="#545b64">%s</text>`+"\n", margin, margin+15, esc(heading))
	for _, w := range widgets {
		drawWidget(&b, w)
	}
	b.WriteString("</svg>\n")
	return b.Bytes(), nil
}

func drawWidget(b *bytes.Buffer, w Widget) {
	x := margin + w.X*colWidth + inset
	y := margin + caption + w.Y*rowUnit + inset
	wd := w.Width*colWidth - 2*inset
	ht := w.Height*rowUnit - 2*inset
	title := w.Properties.Title
	if w.Type == "text" {
		title, _, _ = strings.Cut(w.Properties.Markdown, "\n")
		title = strings.TrimSpace(strings.TrimLeft(title, "#"))
	}
	fmt.Fprintf(b, "<g>\n<title>%s</title>\n", esc(w.Type+": "+title))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="3" fill="#ffffff" stroke="#d5dbdb"/>`+"\n", x, y, wd, ht)
	fit := int(float64(wd-24) / charW)
	titleFit := int(float64(wd-24) / titleW)
	switch w.Type {
	case "text":
		drawText(b, w, x, y, wd, ht, fit)
		b.WriteString("</g>\n")
		return
	case "alarm":
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold" fill="#16191f">%s</text>`+"\n", x+10, y+19, esc(clip(title, titleFit)))
		drawAlarms(b, w.Properties.Alarms, x, y, wd, ht)
		b.WriteString("</g>\n")
		return
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold" fill="#16191f">%s</text>`+"\n", x+10, y+19, esc(clip(title, titleFit)))
	// The graph's floor, and how it aggregates.
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#d5dbdb"/>`+"\n", x+12, y+ht-22, x+wd-12, y+ht-22)
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" fill="#687078" text-anchor="end">%s</text>`+"\n", x+wd-12, y+ht-8, esc(graphNote(w)))
	lines := seriesLines(w)
	room := (ht - 56) / lineStep
	for i, l := range lines {
		ly := y + 40 + i*lineStep
		if i == room-1 && len(lines) > room {
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" fill="#545b64">… %d more</text>`+"\n", x+34, ly, len(lines)-i)
			break
		}
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="4 3"`
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`+"\n", x+12, ly-4, x+28, ly-4, l.colour, dash)
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" fill="#16191f">%s</text>`+"\n", x+34, ly, esc(clip(l.text, fit-4)))
	}
	b.WriteString("</g>\n")
}

// drawText shows a text widget's markdown: headings bold, the rest wrapped.
func drawText(b *bytes.Buffer, w Widget, x, y, wd, ht, fit int) {
	ly := y + 19
	for _, para := range strings.Split(w.Properties.Markdown, "\n") {
		if strings.HasPrefix(para, "#") {
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14" font-weight="bold" fill="#16191f">%s</text>`+"\n", x+10, ly, esc(clip(strings.TrimSpace(strings.TrimLeft(para, "#")), fit)))
			ly += lineStep + 2
			continue
		}
		for _, line := range wrap(para, fit) {
			if ly > y+ht-6 {
				return
			}
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" fill="#545b64">%s</text>`+"\n", x+10, ly, esc(line))
			ly += lineStep - 2
		}
	}
}

// drawAlarms shows one tile per alarm, named as the alarm widget names it.
func drawAlarms(b *bytes.Buffer, alarms []string, x, y, wd, ht int) {
	if len(alarms) == 0 {
		return
	}
	const gap = 8
	tileW := (wd - 20 - gap*(len(alarms)-1)) / len(alarms)
	tileH := ht - 36
	for i, a := range alarms {
		tx := x + 10 + i*(tileW+gap)
		ty := y + 28
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" rx="2" fill="#f2f8f0" stroke="#1d8102"/>`+"\n", tx, ty, tileW, tileH)
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" font-weight="bold" fill="#16191f">%s</text>`+"\n", tx+8, ty+18, esc(clip(alarmName(a), int(float64(tileW-16)/charW))))
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="11" fill="#545b64">state: OK or ALARM</text>`+"\n", tx+8, ty+34)
	}
}

// alarmName is what an alarm ARN (or the picture's <Alarm.Arn>
// placeholder) names.
func alarmName(arn string) string {
	if strings.HasPrefix(arn, "<") && strings.HasSuffix(arn, ".Arn>") {
		return strings.TrimSuffix(strings.TrimPrefix(arn, "<"), ".Arn>")
	}
	if i := strings.LastIndex(arn, ":alarm:"); i >= 0 {
		return arn[i+len(":alarm:"):]
	}
	return arn
}

type seriesLine struct {
	text, colour string
	dashed       bool
}

var searchMetric = regexp.MustCompile(`MetricName=\\?"([A-Za-z0-9_.-]+)\\?".*'([A-Za-z0-9.]+)', *\d+\)$`)

// seriesLines are a metric widget's legend: each series' label (or metric
// and statistic), its axis when on the right, then its annotations.
func seriesLines(w Widget) []seriesLine {
	var out []seriesLine
	for i, entry := range w.Properties.Metrics {
		colour := palette[i%len(palette)]
		var opts map[string]any
		if len(entry) > 0 {
			opts, _ = entry[len(entry)-1].(map[string]any)
		}
		label, _ := opts["label"].(string)
		if label == "" {
			label = defaultLabel(entry, opts)
		}
		if axis, _ := opts["yAxis"].(string); axis == "right" {
			label += " (right axis)"
		}
		out = append(out, seriesLine{text: label, colour: colour})
	}
	for _, a := range w.Properties.Annotations.Horizontal {
		out = append(out, seriesLine{text: a.Label + ": " + strconv.FormatFloat(a.Value, 'f', -1, 64), colour: "#d13212", dashed: true})
	}
	return out
}

func defaultLabel(entry []any, opts map[string]any) string {
	if expr, _ := opts["expression"].(string); expr != "" {
		if m := searchMetric.FindStringSubmatch(expr); m != nil {
			return m[1] + " of each partition (" + m[2] + ")"
		}
		return expr
	}
	stat, _ := opts["stat"].(string)
	if len(entry) >= 2 {
		name, _ := entry[1].(string)
		if stat != "" {
			return name + " (" + stat + ")"
		}
		return name
	}
	return "?"
}

func clip(s string, n int) string {
	r := []rune(s)
	if n < 2 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= n:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// RenderTemplate evaluates the template's dashboard for opts and draws it,
// naming the parameter values it was drawn for above the grid.
func RenderTemplate(template []byte, opts Options) ([]byte, error) {
	body, err := Body(template, opts)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(opts.Params))
	for k := range opts.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	given := "the template's defaults"
	if len(names) > 0 {
		var kv []string
		for _, k := range names {
			kv = append(kv, k+"="+opts.Params[k])
		}
		given = strings.Join(kv, ", ") + " and defaults"
	}
	return Render(body, "The stack's dashboard for "+given+" (drawn from template.yaml by go run ./scripts/dashboard)")
}

// graphNote says how a metric widget aggregates: its view and period.
func graphNote(w Widget) string {
	view := w.Properties.View
	if view == "" {
		view = "timeSeries"
	}
	p := w.Properties.Period
	switch {
	case p == 0:
		return view
	case p%3600 == 0:
		return fmt.Sprintf("%s, period %d h", view, p/3600)
	case p%60 == 0:
		return fmt.Sprintf("%s, period %d min", view, p/60)
	}
	return fmt.Sprintf("%s, period %d s", view, p)
}
