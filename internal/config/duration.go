package config

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

const durationHint = `write a number with a unit: ns, us, ms, s, m, h, d (e.g. "100ms", "1s", "5m", "1h", "1m30s")`

var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nsec": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "μs": time.Microsecond, "usec": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond, "millis": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// ParseDuration parses a duration as upstream's humantime does and as Go
// does: a sequence of number+unit terms, optionally separated by spaces
// ("500ms", "1m 30s", "1m30s", "1.5h", "2 days"). A bare number is refused:
// its unit would be a guess.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty duration; %s", durationHint)
	}
	total := new(big.Rat)
	terms := 0
	for t != "" {
		i := 0
		for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
			i++
		}
		num := t[:i]
		t = strings.TrimLeft(t[i:], " \t")
		j := 0
		for j < len(t) && !(t[j] >= '0' && t[j] <= '9' || t[j] == '.' || t[j] == ' ' || t[j] == '\t') {
			j++
		}
		unit := t[:j]
		t = strings.TrimLeft(t[j:], " \t")
		if num == "" {
			if strings.HasPrefix(unit, "-") || strings.HasPrefix(unit, "+") {
				return 0, fmt.Errorf("duration %q has a sign; durations are not negative; %s", s, durationHint)
			}
			return 0, fmt.Errorf("duration %q: expected a number before %q; %s", s, unit, durationHint)
		}
		r, ok := new(big.Rat).SetString(num)
		if !ok || strings.Count(num, ".") > 1 {
			return 0, fmt.Errorf("duration %q: bad number %q; %s", s, num, durationHint)
		}
		if unit == "" {
			if terms == 0 && t == "" {
				return 0, fmt.Errorf("duration %q has no unit (bare numbers are refused: seconds or milliseconds?); %s", s, durationHint)
			}
			return 0, fmt.Errorf("duration %q: number %q has no unit; %s", s, num, durationHint)
		}
		d, ok := durationUnits[unit]
		if !ok {
			return 0, fmt.Errorf("duration %q: unknown unit %q; %s", s, unit, durationHint)
		}
		total.Add(total, r.Mul(r, new(big.Rat).SetInt64(int64(d))))
		terms++
	}
	n := new(big.Int).Quo(total.Num(), total.Denom())
	if !n.IsInt64() {
		return 0, fmt.Errorf("duration %q is too long (max %s)", s, time.Duration(math.MaxInt64))
	}
	return time.Duration(n.Int64()), nil
}
