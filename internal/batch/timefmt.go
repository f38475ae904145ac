package batch

// maxRFC3339Sec is 9999-12-31T23:59:59Z: RFC 3339 has four-digit years, so
// later instants are out of range.
const maxRFC3339Sec = 253402300799

const epochText = "1970-01-01T00:00:00Z"

// appendRFC3339Seconds writes the server timestamp (µs since the epoch) as
// RFC 3339 with whole seconds and a Z suffix; sub-seconds are truncated, as
// chrono's SecondsFormat::Secs does. Out-of-range instants become the epoch,
// the upstream fallback.
func appendRFC3339Seconds(dst []byte, micros uint64) []byte {
	secs := micros / 1_000_000
	if secs > maxRFC3339Sec {
		return append(dst, epochText...)
	}
	days := secs / 86400
	rem := secs % 86400
	y, m, d := civilFromDays(days)
	hh, mm, ss := rem/3600, rem/60%60, rem%60
	return append(dst,
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+m/10), byte('0'+m%10), '-',
		byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+hh/10), byte('0'+hh%10), ':',
		byte('0'+mm/10), byte('0'+mm%10), ':',
		byte('0'+ss/10), byte('0'+ss%10), 'Z')
}

// civilFromDays converts days since 1970-01-01 into a proleptic Gregorian
// date (H. Hinnant's days_from_civil inverse, non-negative days only).
func civilFromDays(days uint64) (y, m, d uint64) {
	z := days + 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
