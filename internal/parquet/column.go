package parquet

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
)

// pageEnv holds what every column's page encoding shares: the codec, the
// size limits and scratch buffers.
type pageEnv struct {
	comp      *compressor
	pageBytes int // a page is cut once its estimated size reaches this
	pageRows  int // … or once it holds this many level entries
	dictBytes int // a dictionary larger than this stops the chunk's dictionary encoding
	body      []byte
	cbuf      []byte
	tw        thriftWriter
}

// column buffers one leaf's current page and the finished, compressed pages
// of its current column chunk.
type column struct {
	ptype          int32
	maxDef, maxRep uint8
	path           []string

	// The current page.
	defs, reps []uint8
	vals       []byte   // PLAIN values (booleans one byte each)
	idx        []uint32 // dictionary entry of each value (dictionary mode)
	entries    int      // level entries (one per value or null)
	pagePlain  int      // PLAIN size of the page's values, for the fallback test

	// The current column chunk.
	dict         dictionary
	useDict      bool // values go to the dictionary
	dictUsed     bool // some page of the chunk is dictionary-encoded
	plainUsed    bool // some page of the chunk is PLAIN
	pagesFlushed int
	probed       bool   // the first dictProbe values were judged
	pages        []byte // page headers and compressed bodies
	uncompressed int64  // pages' uncompressed size, headers included
	numValues    int64
	nulls        int64
	hasMinMax    bool
	minI, maxI   int64
	minF, maxF   float64
	// byteStats: the chunk's byte-array min and max (minB, maxB) are
	// written too (Options.StatsColumns).
	byteStats  bool
	minB, maxB []byte
}

// dictEligible: booleans have nothing to gain from a dictionary.
func (c *column) dictEligible() bool { return c.ptype != typeBoolean }

// startChunk readies the column for a new column chunk, keeping buffers.
func (c *column) startChunk() {
	c.defs, c.reps, c.vals, c.idx = c.defs[:0], c.reps[:0], c.vals[:0], c.idx[:0]
	c.entries, c.pagePlain = 0, 0
	c.dict.reset()
	c.useDict = c.dictEligible()
	c.dictUsed, c.plainUsed = false, false
	c.pagesFlushed = 0
	c.probed = false
	c.pages = c.pages[:0]
	c.uncompressed, c.numValues, c.nulls = 0, 0, 0
	c.hasMinMax = false
	c.minB, c.maxB = c.minB[:0], c.maxB[:0]
}

func (c *column) level(def, rep uint8) {
	if c.maxDef > 0 {
		c.defs = append(c.defs, def)
	}
	if c.maxRep > 0 {
		c.reps = append(c.reps, rep)
	}
	c.entries++
}

func (c *column) addNull(def, rep uint8) { c.level(def, rep) }

func (c *column) addFixed(k []byte, def, rep uint8) {
	c.level(def, rep)
	if c.useDict {
		c.idx = append(c.idx, c.dict.insert(k))
		c.pagePlain += len(k)
		return
	}
	c.vals = append(c.vals, k...)
}

func (c *column) addInt64(v int64, def, rep uint8) {
	var k [8]byte
	binary.LittleEndian.PutUint64(k[:], uint64(v))
	c.addFixed(k[:], def, rep)
}

func (c *column) addInt32(v int32, def, rep uint8) {
	var k [4]byte
	binary.LittleEndian.PutUint32(k[:], uint32(v))
	c.addFixed(k[:], def, rep)
}

func (c *column) addDouble(v float64, def, rep uint8) {
	var k [8]byte
	binary.LittleEndian.PutUint64(k[:], math.Float64bits(v))
	c.addFixed(k[:], def, rep)
}

func (c *column) addBool(v bool, def, rep uint8) {
	c.level(def, rep)
	b := byte(0)
	if v {
		b = 1
	}
	c.vals = append(c.vals, b)
}

func (c *column) addBytes(b []byte, def, rep uint8) {
	c.level(def, rep)
	if c.byteStats {
		c.foldBytes(b)
	}
	if c.useDict {
		c.idx = append(c.idx, c.dict.insert(b))
		c.pagePlain += 4 + len(b)
		return
	}
	n := len(b)
	c.vals = append(c.vals, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	c.vals = append(c.vals, b...)
}

// colMark is a column's state before a record, to undo a rejected one.
type colMark struct {
	defs, reps, vals, idx, entries, pagePlain, dict int
}

func (c *column) mark() colMark {
	return colMark{len(c.defs), len(c.reps), len(c.vals), len(c.idx), c.entries, c.pagePlain, c.dict.len()}
}

func (c *column) rollback(m colMark) {
	c.defs, c.reps, c.vals, c.idx = c.defs[:m.defs], c.reps[:m.reps], c.vals[:m.vals], c.idx[:m.idx]
	c.entries, c.pagePlain = m.entries, m.pagePlain
	c.dict.truncate(m.dict)
}

// dictPlainSize is the size of the dictionary page before compression.
func (c *column) dictPlainSize() int {
	if c.ptype == typeByteArray {
		return len(c.dict.data) + 4*c.dict.len()
	}
	return len(c.dict.data)
}

// dictProbe is how many values of a chunk's first page show whether a
// dictionary pays; deciding early spares high-cardinality columns (ids,
// timestamps, messages) the hashing of every value.
const dictProbe = 1024

// afterRecord cuts the page when it is full and ends dictionary encoding
// for the rest of the chunk when the dictionary outgrew its limit. It runs
// only between records, so a record never spans two pages. Every decision
// depends only on the values written, so the bytes are deterministic.
func (c *column) afterRecord(env *pageEnv) {
	if c.useDict {
		if c.pagesFlushed == 0 && !c.probed && len(c.idx) >= dictProbe {
			c.probed = true
			if !c.dictPays() {
				c.toPlain()
			}
		} else if c.dictPlainSize() > env.dictBytes {
			c.flushPage(env)
			c.useDict = false
			return
		}
	}
	est := len(c.vals) + (len(c.idx)*bits.Len(uint(c.dict.len()))+7)/8 + (len(c.defs)+len(c.reps))/4
	if est >= env.pageBytes || c.entries >= env.pageRows {
		c.flushPage(env)
	}
}

// dictPays reports whether the distinct values take at most half of the
// PLAIN size of the values so far; if not, the chunk is better PLAIN.
func (c *column) dictPays() bool { return 2*c.dictPlainSize() <= c.pagePlain }

// flushPage encodes, compresses and keeps the current page. The first page
// of a chunk (or its first dictProbe values) decides whether a dictionary
// pays; if not, the page and the rest of the chunk are PLAIN.
func (c *column) flushPage(env *pageEnv) {
	if c.entries == 0 {
		return
	}
	if c.useDict && c.pagesFlushed == 0 && !c.dictPays() {
		c.toPlain()
	}
	body := env.body[:0]
	if c.maxRep > 0 {
		body = appendLevels(body, c.reps, c.maxRep)
	}
	if c.maxDef > 0 {
		body = appendLevels(body, c.defs, c.maxDef)
		for _, d := range c.defs {
			if d < c.maxDef {
				c.nulls++
			}
		}
	}
	enc := encPlain
	switch {
	case c.useDict && len(c.idx) > 0:
		bw := max(1, bits.Len(uint(c.dict.len()-1)))
		body = append(body, byte(bw))
		body = appendHybrid(body, c.idx, bw)
		enc = encRLEDictionary
		c.dictUsed = true
	case c.ptype == typeBoolean:
		body = appendBools(body, c.vals)
		c.plainUsed = true
	default:
		body = append(body, c.vals...)
		c.statsPlain(c.vals)
		c.plainUsed = true
	}
	env.cbuf = env.comp.compress(env.cbuf[:0], body)
	env.tw.reset()
	env.tw.dataPageHeader(len(body), len(env.cbuf), c.entries, enc)
	c.pages = append(c.pages, env.tw.buf...)
	c.pages = append(c.pages, env.cbuf...)
	c.uncompressed += int64(len(env.tw.buf) + len(body))
	c.numValues += int64(c.entries)
	env.body = body
	c.pagesFlushed++
	c.defs, c.reps, c.vals, c.idx = c.defs[:0], c.reps[:0], c.vals[:0], c.idx[:0]
	c.entries, c.pagePlain = 0, 0
}

// toPlain re-encodes the page's dictionary indices as PLAIN values and
// drops the dictionary for the rest of the chunk.
func (c *column) toPlain() {
	for _, i := range c.idx {
		e := c.dict.entry(int(i))
		if c.ptype == typeByteArray {
			n := len(e)
			c.vals = append(c.vals, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
		}
		c.vals = append(c.vals, e...)
	}
	c.idx = c.idx[:0]
	c.dict.reset()
	c.useDict = false
}

// statsPlain folds PLAIN numeric values into the chunk's min and max.
func (c *column) statsPlain(vals []byte) {
	switch c.ptype {
	case typeInt64:
		for p := 0; p+8 <= len(vals); p += 8 {
			c.foldInt(int64(binary.LittleEndian.Uint64(vals[p:])))
		}
	case typeInt32:
		for p := 0; p+4 <= len(vals); p += 4 {
			c.foldInt(int64(int32(binary.LittleEndian.Uint32(vals[p:]))))
		}
	case typeDouble:
		for p := 0; p+8 <= len(vals); p += 8 {
			c.foldFloat(math.Float64frombits(binary.LittleEndian.Uint64(vals[p:])))
		}
	}
}

func (c *column) foldInt(v int64) {
	if !c.hasMinMax {
		c.minI, c.maxI, c.hasMinMax = v, v, true
		return
	}
	c.minI = min(c.minI, v)
	c.maxI = max(c.maxI, v)
}

// foldBytes folds a byte-array value into the chunk's min and max, in
// unsigned byte order (the order of UTF-8 strings).
func (c *column) foldBytes(b []byte) {
	if !c.hasMinMax {
		c.minB, c.maxB, c.hasMinMax = append(c.minB[:0], b...), append(c.maxB[:0], b...), true
		return
	}
	if bytes.Compare(b, c.minB) < 0 {
		c.minB = append(c.minB[:0], b...)
	}
	if bytes.Compare(b, c.maxB) > 0 {
		c.maxB = append(c.maxB[:0], b...)
	}
}

// foldFloat ignores NaN, as the format asks of writers.
func (c *column) foldFloat(v float64) {
	if v != v {
		return
	}
	if !c.hasMinMax {
		c.minF, c.maxF, c.hasMinMax = v, v, true
		return
	}
	if v < c.minF {
		c.minF = v
	}
	if v > c.maxF {
		c.maxF = v
	}
}

// stats returns the chunk's Statistics.
func (c *column) stats() statistics {
	s := statistics{nullCount: c.nulls}
	if !c.hasMinMax {
		return s
	}
	s.hasMinMax = true
	switch c.ptype {
	case typeInt64:
		s.size = 8
		binary.LittleEndian.PutUint64(s.min[:], uint64(c.minI))
		binary.LittleEndian.PutUint64(s.max[:], uint64(c.maxI))
	case typeInt32:
		s.size = 4
		binary.LittleEndian.PutUint32(s.min[:], uint32(int32(c.minI)))
		binary.LittleEndian.PutUint32(s.max[:], uint32(int32(c.maxI)))
	case typeDouble:
		// The format asks for -0.0 as a zero minimum and +0.0 as a zero
		// maximum, so that either zero compares inside the range.
		lo, hi := c.minF, c.maxF
		if lo == 0 {
			lo = math.Copysign(0, -1)
		}
		if hi == 0 {
			hi = 0
		}
		s.size = 8
		binary.LittleEndian.PutUint64(s.min[:], math.Float64bits(lo))
		binary.LittleEndian.PutUint64(s.max[:], math.Float64bits(hi))
	case typeByteArray:
		s.minB, s.maxB = c.minB, c.maxB
	default:
		s.hasMinMax = false
	}
	return s
}

// finishChunk flushes the last page and writes the chunk — dictionary page
// first — to w, describing it in meta.
func (c *column) finishChunk(env *pageEnv, w *countWriter, meta *chunkMeta) error {
	c.flushPage(env)
	meta.ptype = c.ptype
	meta.path = c.path
	meta.codec = env.comp.codec
	meta.numValues = c.numValues
	meta.dictPageOffset = -1
	meta.totalUncompressed = c.uncompressed
	meta.totalCompressed = int64(len(c.pages))
	if c.dictUsed {
		if err := c.writeDictPage(env, w, meta); err != nil {
			return err
		}
	}
	meta.dataPageOffset = w.off
	meta.stats = c.stats()
	meta.encodings = meta.encodings[:0]
	if c.plainUsed || c.dictUsed {
		meta.encodings = append(meta.encodings, encPlain)
	}
	if c.maxDef > 0 || c.maxRep > 0 {
		meta.encodings = append(meta.encodings, encRLE)
	}
	if c.dictUsed {
		meta.encodings = append(meta.encodings, encRLEDictionary)
	}
	return w.write(c.pages)
}

// writeDictPage writes the chunk's PLAIN dictionary page and folds its
// values into the chunk's min and max.
func (c *column) writeDictPage(env *pageEnv, w *countWriter, meta *chunkMeta) error {
	body := env.body[:0]
	for i := range c.dict.len() {
		e := c.dict.entry(i)
		switch c.ptype {
		case typeInt64:
			c.foldInt(int64(binary.LittleEndian.Uint64(e)))
		case typeInt32:
			c.foldInt(int64(int32(binary.LittleEndian.Uint32(e))))
		case typeDouble:
			c.foldFloat(math.Float64frombits(binary.LittleEndian.Uint64(e)))
		case typeByteArray:
			n := len(e)
			body = append(body, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
		}
		body = append(body, e...)
	}
	env.body = body
	env.cbuf = env.comp.compress(env.cbuf[:0], body)
	env.tw.reset()
	env.tw.dictPageHeader(len(body), len(env.cbuf), c.dict.len())
	meta.dictPageOffset = w.off
	meta.totalUncompressed += int64(len(env.tw.buf) + len(body))
	meta.totalCompressed += int64(len(env.tw.buf) + len(env.cbuf))
	if err := w.write(env.tw.buf); err != nil {
		return err
	}
	return w.write(env.cbuf)
}
