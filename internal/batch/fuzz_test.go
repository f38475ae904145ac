package batch

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// decodeNumbers decodes JSON keeping number texts, so that a compacted
// value compares equal to its source digit for digit.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// isJSON is what the scanner accepts by default: JSON (encoding/json), UTF-8,
// and nested at most 128 levels deep.
func isJSON(b []byte) bool { return json.Valid(b) && utf8.Valid(b) && nesting(b) <= 128 }

// nesting is the deepest bracket nesting of b outside strings.
func nesting(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// collapseFFFD merges runs of U+FFFD, so that lossy conversions that replace
// per ill-formed subpart and per run compare equal.
func collapseFFFD(s string) string {
	for strings.Contains(s, "\uFFFD\uFFFD") {
		s = strings.ReplaceAll(s, "\uFFFD\uFFFD", "\uFFFD")
	}
	return s
}

func FuzzRecord(f *testing.F) {
	f.Add([]byte(`{"method":"GET","status":200}`), wireHeaders(strHdr("content-type", "application/json")), "s", uint64(1))
	f.Add([]byte("hello"), []byte{}, "a\"b", uint64(0))
	f.Add([]byte{0, 1, 2, 0xff}, []byte{2, 1, 0, 0, 0}, "\xff", uint64(math.MaxUint64))
	f.Add([]byte(" [1, 2.50, \"\\u00e9\"] "), wireHeaders(hdr{kindInt32, le32(7), kindDouble, le64(math.Float64bits(math.Inf(1)))}), "x/y", uint64(253402300800000000))
	schemas := []Schema{SchemaJSON, SchemaText, SchemaRaw, SchemaProto, SchemaFlatbuffer, SchemaAvro}
	f.Fuzz(func(t *testing.T, payload, headers []byte, stream string, ts uint64) {
		p := Partition{Stream: stream, Topic: "t", ID: 9}
		for _, schema := range schemas {
			e := mustEncoder(t, p, Options{Format: "json_lines", Schema: schema, IncludeMetadata: true, IncludeHeaders: true})
			m := &Message{Offset: 5, Timestamp: ts, Headers: headers, Payload: payload}
			rec, err := e.AppendRecord(nil, m, true)
			if err != nil {
				t.Fatalf("%s: %v", schema, err)
			}
			if !bytes.HasSuffix(rec, []byte("\n")) || bytes.Count(rec, []byte("\n")) != 1 {
				t.Fatalf("%s: record is not one line: %q", schema, rec)
			}
			if !isJSON(rec) {
				t.Fatalf("%s: record is not valid UTF-8 JSON: %q", schema, rec)
			}
			v, err := decodeNumbers(rec)
			if err != nil {
				t.Fatal(err)
			}
			obj := v.(map[string]any)
			if got, _ := obj["stream"].(string); collapseFFFD(got) != collapseFFFD(strings.ToValidUTF8(stream, "\uFFFD")) {
				t.Fatalf("stream %q rendered as %q", stream, obj["stream"])
			}
			if h, ok := obj["headers"]; ok {
				if _, isObj := h.(map[string]any); !isObj || len(headers) == 0 {
					t.Fatalf("headers field %v for header bytes %q", h, headers)
				}
			}
			got := obj["payload"]
			switch {
			case schema == "text":
				want := collapseFFFD(strings.ToValidUTF8(string(payload), "\uFFFD"))
				if s, ok := got.(string); !ok || collapseFFFD(s) != want || (utf8.Valid(payload) && s != string(payload)) {
					t.Fatalf("text payload %q rendered as %#v", payload, got)
				}
			case isJSON(payload):
				want, err := decodeNumbers(payload)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: payload %q decoded to %#v, want %#v", schema, payload, got, want)
				}
			default:
				if got != base64.StdEncoding.EncodeToString(payload) {
					t.Fatalf("%s: non-JSON payload %q rendered as %#v, want base64", schema, payload, got)
				}
			}
		}
	})
}

// FuzzHeaders builds two typed headers and checks that every value renders
// to what an independent decoding (encoding/binary, math/big, base64) of
// the wire bytes says.
func FuzzHeaders(f *testing.F) {
	f.Add("k", uint8(kindString), []byte("v"), uint8(kindString), []byte("key2"), uint8(kindInt64), []byte{1, 2, 3, 4, 5, 6, 7, 0x80})
	f.Add("same", uint8(kindFloat), []byte{0, 0, 0xc0, 0x7f}, uint8(kindString), []byte("same"), uint8(kindUint128), bytes.Repeat([]byte{0xff}, 16))
	f.Add("r", uint8(kindRaw), []byte{0xff, 0}, uint8(kindInt32), le32(7), uint8(kindInt128), append(le64(0), le64(1<<63)...))
	f.Fuzz(func(t *testing.T, key1 string, kind1 uint8, val1 []byte, key2Kind uint8, key2 []byte, kind2 uint8, val2 []byte) {
		// Map any byte onto the kinds 1..15, leaving 1..15 themselves alone.
		kind1 = (kind1+14)%15 + 1
		kind2 = (kind2+14)%15 + 1
		key2Kind = (key2Kind+14)%15 + 1
		val1 = fitValue(kind1, val1)
		val2 = fitValue(kind2, val2)
		key2 = fitValue(key2Kind, key2)
		wire := wireHeaders(hdr{kindString, []byte(key1), kind1, val1}, hdr{key2Kind, key2, kind2, val2})
		e := mustEncoder(t, appLogs, Options{Format: "json_array", Schema: "raw", IncludeHeaders: true})
		rec, err := e.AppendRecord(nil, &Message{Headers: wire, Payload: []byte("1")}, true)
		if err != nil {
			t.Fatal(err)
		}
		if !isJSON(rec) {
			t.Fatalf("record is not valid UTF-8 JSON: %q", rec)
		}
		v, err := decodeNumbers(rec)
		if err != nil {
			t.Fatal(err)
		}
		h, ok := v.(map[string]any)["headers"].(map[string]any)
		if !ok {
			t.Fatalf("no headers object in %s (malformed count %d)", rec, e.MalformedHeaders())
		}
		k1 := strings.ToValidUTF8(key1, "\uFFFD")
		k2 := keyText(t, key2Kind, key2)
		if !utf8.ValidString(key1) || (key2Kind == kindString && !utf8.Valid(key2)) {
			return // lossy keys: validity checked above, values below need exact keys
		}
		want := 2
		if k1 == k2 {
			want = 1
		}
		if len(h) != want {
			t.Fatalf("%d keys in %s, want %d", len(h), rec, want)
		}
		checkValue(t, h[k2], kind2, val2) // the later header wins a duplicate key
		if k1 != k2 {
			checkValue(t, h[k1], kind1, val1)
		}
	})
}

// fitValue pads or cuts v to the size its kind needs and bounds it to 255.
func fitValue(kind uint8, v []byte) []byte {
	if n := fixedSize[kind]; n != 0 {
		return append(append([]byte(nil), v...), make([]byte, n)...)[:n]
	}
	if len(v) > 255 {
		v = v[:255]
	}
	return v
}

// expectText is the value's text by an independent decoding.
func expectText(kind uint8, v []byte) (text string, quoted bool) {
	switch kind {
	case kindRaw:
		return base64.StdEncoding.EncodeToString(v), true
	case kindString:
		return string(v), true
	case kindBool:
		return strconv.FormatBool(v[0] != 0), false
	case kindInt8, kindInt16, kindInt32, kindInt64:
		ext := make([]byte, 8)
		copy(ext, v)
		if v[len(v)-1]&0x80 != 0 {
			for i := len(v); i < 8; i++ {
				ext[i] = 0xff
			}
		}
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(ext)), 10), false
	case kindUint8, kindUint16, kindUint32, kindUint64:
		ext := make([]byte, 8)
		copy(ext, v)
		return strconv.FormatUint(binary.LittleEndian.Uint64(ext), 10), false
	case kindInt128, kindUint128:
		be := make([]byte, 16)
		for i := range 16 {
			be[i] = v[15-i]
		}
		n := new(big.Int).SetBytes(be)
		if kind == kindInt128 && v[15]&0x80 != 0 {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		return n.String(), true
	case kindFloat, kindDouble:
		f := floatOf(kind, v)
		switch {
		case math.IsNaN(f):
			return "NaN", true
		case math.IsInf(f, 1):
			return "inf", true
		case math.IsInf(f, -1):
			return "-inf", true
		}
		return "", false // compared numerically
	}
	return "", false
}

func keyText(t *testing.T, kind uint8, v []byte) string {
	if kind == kindFloat || kind == kindDouble {
		if s, _ := expectText(kind, v); s != "" {
			return s
		}
		return string(appendFloat(nil, floatOf(kind, v), map[uint8]int{kindFloat: 32, kindDouble: 64}[kind]))
	}
	s, _ := expectText(kind, v)
	return s
}

func checkValue(t *testing.T, got any, kind uint8, v []byte) {
	t.Helper()
	want, quoted := expectText(kind, v)
	if (kind == kindFloat || kind == kindDouble) && want == "" {
		n, ok := got.(json.Number)
		if !ok {
			t.Fatalf("float header rendered as %#v", got)
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if kind == kindFloat {
			f = float64(float32(f))
		}
		if err != nil || f != floatOf(kind, v) {
			t.Fatalf("float header %v rendered as %s", floatOf(kind, v), n)
		}
		return
	}
	if kind == kindString {
		want = collapseFFFD(strings.ToValidUTF8(want, "\uFFFD"))
		if g, ok := got.(string); ok && utf8.Valid(v) && g != string(v) {
			t.Fatalf("string header %q rendered as %q", v, g)
		}
	}
	switch g := got.(type) {
	case string:
		if kind == kindString {
			g = collapseFFFD(g)
		}
		if !quoted || g != want {
			t.Fatalf("kind %d value %x rendered as string %q, want %q (quoted %v)", kind, v, g, want, quoted)
		}
	case json.Number:
		if quoted || string(g) != want {
			t.Fatalf("kind %d value %x rendered as number %s, want %s", kind, v, g, want)
		}
	case bool:
		if quoted || strconv.FormatBool(g) != want {
			t.Fatalf("kind %d value %x rendered as %v, want %s", kind, v, g, want)
		}
	default:
		t.Fatalf("kind %d value %x rendered as %#v", kind, v, got)
	}
}
