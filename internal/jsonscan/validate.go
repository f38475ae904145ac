package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// DefaultMaxDepth is the nesting limit of a zero Scanner: serde_json's, the
// upstream connector's parser, and well within what Python's json and other
// recursive readers handle, so every record the sink writes can be read back.
const DefaultMaxDepth = 128

// MaxDepthLimit is the largest MaxDepth: encoding/json's nesting limit. The
// depth stack is sized for it so that a Scanner never allocates.
const MaxDepthLimit = 10000

const maxDepth = MaxDepthLimit

// strPlain marks the bytes a JSON string may contain without a second look:
// everything except '"', '\\', control characters and non-ASCII bytes (which
// need UTF-8 validation).
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// isSpace marks JSON's four insignificant whitespace bytes.
var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// isHex marks the digits a \u escape accepts.
var isHex = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] = true
	}
	return t
}()

// Scanner validates and compacts JSON text: a whole document
// (AppendCompact) or one value inside a larger text (AppendCompactValue,
// ScanValue). Its depth stack lives inside the struct so that a reused
// Scanner never allocates; it is not safe for concurrent use.
type Scanner struct {
	// stack holds one bit per open container: 1 = object, 0 = array.
	stack [maxDepth/64 + 1]uint64
	// MaxDepth is the deepest nesting accepted as JSON (1..MaxDepthLimit);
	// 0 means DefaultMaxDepth. Deeper input is invalid.
	MaxDepth int
	// Record asks AppendCompact to note the members of a top-level object
	// in Members (offsets into the compacted output), for a transformer.
	Record  bool
	Members []Member
	// discard has scan append nothing (ScanValue). A field rather than a
	// parameter: it is read only where whitespace is cut, so the common
	// path keeps its registers.
	discard bool
}

// Member locates one member of a top-level JSON object in the compacted
// payload: the key (a string literal, quotes included) is
// payload[KeyStart:KeyEnd] and its value payload[ValStart:ValEnd].
type Member struct{ KeyStart, KeyEnd, ValStart, ValEnd int }

// AppendCompact validates src as exactly one JSON value (RFC 8259, which
// also means UTF-8 text, and at most MaxDepth levels of nesting), with
// optional whitespace around it, and appends it to dst without
// insignificant whitespace; strings and number texts are copied unchanged.
// When src has no whitespace outside strings the whole value goes out in a
// single append.
//
// On invalid input it returns dst unchanged (its first len(dst) bytes),
// false, and the byte offset where the input stopped being JSON: as
// AppendCompactValue reports it, except that a \u escape the input cuts
// short stops at len(src), and a value followed by more than whitespace
// stops at the first byte of the excess.
func (sc *Scanner) AppendCompact(dst, src []byte) ([]byte, bool, int) {
	sc.Members = sc.Members[:0]
	i := 0
	// Whitespace is rare in producer output, so the check costs one
	// compare in the common case.
	if len(src) > 0 && src[0] <= ' ' {
		i = SkipSpace(src, 0)
	}
	sc.discard = false
	out, end := sc.scan(dst, src, i, sc.Record)
	if end < 0 {
		at := ^end
		if cutEscape(src, at) {
			at = len(src)
		}
		return out, false, at
	}
	if end != len(src) {
		if j := SkipSpace(src, end); j != len(src) {
			return out[:len(dst)], false, j
		}
	}
	return out, true, 0
}

// AppendCompactValue validates the one JSON value that starts at src[i]
// (not whitespace: see SkipSpace), nested at most MaxDepth levels counted
// from that value, and appends it to dst without insignificant whitespace,
// strings and number texts as written. It returns dst and the index just
// past the value; what follows the value is not looked at.
//
// On invalid input it returns dst unchanged (its first len(dst) bytes) and
// ^f, a negative number, where f is the offset of the fault: the byte
// where a value, a member name, ':', ',' or a closing bracket was due,
// len(src) when the input ends first, the opening bracket that nests one
// level too deep, the first byte of a literal other than true, false or
// null, or the fault ScanString and ScanNumber report inside a string or a
// number. Record and Members are neither used nor changed.
func (sc *Scanner) AppendCompactValue(dst, src []byte, i int) ([]byte, int) {
	sc.discard = false
	return sc.scan(dst, src, i, false)
}

// ScanValue validates the value at src[i] exactly as AppendCompactValue
// does and returns the same index or ^fault, appending nothing.
func (sc *Scanner) ScanValue(src []byte, i int) int {
	sc.discard = true
	_, end := sc.scan(nil, src, i, false)
	return end
}

// cutEscape reports whether at, a fault scan reported in src, is that of a
// \u escape src cuts short (AppendCompact reports it at len(src)): fewer
// than four bytes from at on, and "\u" just before at whose backslash
// starts an escape, being the last of an odd run of backslashes. (Outside
// a string a backslash is itself the fault, so the run lies in the string
// that faulted, and its first backslash starts an escape.)
func cutEscape(src []byte, at int) bool {
	if at+4 <= len(src) || at < 2 || src[at-1] != 'u' {
		return false
	}
	k := at - 2
	for k >= 0 && src[k] == '\\' {
		k--
	}
	return (at-2-k)%2 == 1
}

// scan is AppendCompactValue, appending nothing with sc.discard and noting
// the members of a top-level object with record.
func (sc *Scanner) scan(dst, src []byte, i int, record bool) ([]byte, int) {
	orig := len(dst)
	n := len(src)
	run := i // start of the bytes not yet appended to dst
	depth := 0
	limit := sc.MaxDepth
	if limit <= 0 {
		limit = DefaultMaxDepth
	}
	limit = min(limit, maxDepth)
	var c byte
	var k int // where a string's scan resumes
	// Member recording: top is set when the value is an object and members
	// are wanted; pos maps a source index to its offset in the output.
	top := record && i < n && src[i] == '{'
	var m Member
	pos := func(i int) int { return len(dst) - orig + i - run }

value:
	if i >= n {
		goto fail
	}
	if top && depth == 1 {
		m.ValStart = pos(i)
	}
	c = src[i]
	switch {
	case c == '"':
		// Most strings are short: settle them from one word, without a call.
		// Another resumes where the word stops being plain: ScanString
		// starts just after the index it is given, which it does not read.
		k = i
		if i+9 <= n {
			m := special(binary.LittleEndian.Uint64(src[i+1:]))
			if m == 0 {
				k = i + 8
			} else if j := i + 1 + bits.TrailingZeros64(m)>>3; src[j] == '"' {
				i = j + 1
				goto afterValue
			} else {
				k = j - 1
			}
		}
		if j, _ := ScanString(src, k); j >= 0 {
			i = j
		} else {
			i = ^j
			goto fail
		}
	case c == '{':
		if depth == limit {
			goto fail
		}
		sc.stack[depth>>6] |= 1 << (depth & 63)
		depth++
		i++
		if i < n && src[i] <= ' ' {
			if j := SkipSpace(src, i); j != i {
				if !sc.discard {
					dst = append(dst, src[run:i]...)
				}
				i, run = j, j
			}
		}
		if i < n && src[i] == '}' {
			i++
			depth--
			goto afterValue
		}
		goto key
	case c == '[':
		if depth == limit {
			goto fail
		}
		sc.stack[depth>>6] &^= 1 << (depth & 63)
		depth++
		i++
		if i < n && src[i] <= ' ' {
			if j := SkipSpace(src, i); j != i {
				if !sc.discard {
					dst = append(dst, src[run:i]...)
				}
				i, run = j, j
			}
		}
		if i < n && src[i] == ']' {
			i++
			depth--
			goto afterValue
		}
		goto value
	case c == '-' || (c >= '0' && c <= '9'):
		if j, _ := ScanNumber(src, i); j >= 0 {
			i = j
		} else {
			i = ^j
			goto fail
		}
	case c == 't':
		if j := ScanLiteral(src, i, "true"); j >= 0 {
			i = j
		} else {
			goto fail
		}
	case c == 'f':
		if j := ScanLiteral(src, i, "false"); j >= 0 {
			i = j
		} else {
			goto fail
		}
	case c == 'n':
		if j := ScanLiteral(src, i, "null"); j >= 0 {
			i = j
		} else {
			goto fail
		}
	default:
		goto fail
	}

afterValue:
	if top && depth == 1 {
		m.ValEnd = pos(i)
		sc.Members = append(sc.Members, m)
	}
	if depth == 0 {
		if !sc.discard {
			dst = append(dst, src[run:i]...)
		}
		return dst, i
	}
	if i < n && src[i] <= ' ' {
		if j := SkipSpace(src, i); j != i {
			if !sc.discard {
				dst = append(dst, src[run:i]...)
			}
			i, run = j, j
		}
	}
	if i >= n {
		goto fail
	}
	c = src[i]
	if sc.stack[(depth-1)>>6]&(1<<((depth-1)&63)) != 0 {
		switch c {
		case ',':
			i++
			if i < n && src[i] <= ' ' {
				if j := SkipSpace(src, i); j != i {
					if !sc.discard {
						dst = append(dst, src[run:i]...)
					}
					i, run = j, j
				}
			}
			goto key
		case '}':
			i++
			depth--
			goto afterValue
		}
		goto fail
	}
	switch c {
	case ',':
		i++
		if i < n && src[i] <= ' ' {
			if j := SkipSpace(src, i); j != i {
				if !sc.discard {
					dst = append(dst, src[run:i]...)
				}
				i, run = j, j
			}
		}
		goto value
	case ']':
		i++
		depth--
		goto afterValue
	}
	goto fail

key:
	if i >= n || src[i] != '"' {
		goto fail
	}
	if top && depth == 1 {
		m.KeyStart = pos(i)
	}
	k = i // as for a string value
	if i+9 <= n {
		m := special(binary.LittleEndian.Uint64(src[i+1:]))
		if m == 0 {
			k = i + 8
		} else if j := i + 1 + bits.TrailingZeros64(m)>>3; src[j] == '"' {
			i = j + 1
			goto colon
		} else {
			k = j - 1
		}
	}
	if j, _ := ScanString(src, k); j >= 0 {
		i = j
	} else {
		i = ^j
		goto fail
	}
colon:
	if top && depth == 1 {
		m.KeyEnd = pos(i)
	}
	if i < n && src[i] <= ' ' {
		if j := SkipSpace(src, i); j != i {
			if !sc.discard {
				dst = append(dst, src[run:i]...)
			}
			i, run = j, j
		}
	}
	if i >= n || src[i] != ':' {
		goto fail
	}
	i++
	if i < n && src[i] <= ' ' {
		if j := SkipSpace(src, i); j != i {
			if !sc.discard {
				dst = append(dst, src[run:i]...)
			}
			i, run = j, j
		}
	}
	goto value

fail:
	return dst[:orig], ^i
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(src []byte, i int) int {
	for i < len(src) && isSpace[src[i]] {
		i++
	}
	return i
}
