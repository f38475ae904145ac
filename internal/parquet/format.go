package parquet

// The Parquet format's Thrift structures, reduced to the fields this writer
// sets (parquet-format's parquet.thrift names them; field ids are noted
// where they are written).

// Physical types.
const (
	typeBoolean   int32 = 0
	typeInt32     int32 = 1
	typeInt64     int32 = 2
	typeDouble    int32 = 5
	typeByteArray int32 = 6
)

// Field repetition types.
const (
	repRequired int32 = 0
	repOptional int32 = 1
	repRepeated int32 = 2
)

// Encodings.
const (
	encPlain         int32 = 0
	encRLE           int32 = 3
	encRLEDictionary int32 = 8
)

// Compression codecs.
const (
	codecUncompressed int32 = 0
	codecSnappy       int32 = 1
	codecGzip         int32 = 2
	codecZstd         int32 = 6
)

// Page types.
const (
	pageData       int32 = 0
	pageDictionary int32 = 2
)

// Legacy converted types, written next to the logical types for readers
// that predate them (Hive-era Athena engines among them).
const (
	convNone            int32 = -1
	convUTF8            int32 = 0
	convMap             int32 = 1
	convList            int32 = 3
	convTimestampMicros int32 = 10
)

// logical is the LogicalType union member a schema element carries.
type logical uint8

const (
	logNone logical = iota
	logString
	logMap
	logList
	logTimestampMicrosUTC
)

// CreatedBy is the fixed created_by string of every file: a version, never
// a build id or time, so that re-rendering an object gives the same bytes.
// Change the version when the bytes this package writes for the same input
// change.
const CreatedBy = "iggy-s3-sink version 1.0.0 (build parquet-1)"

// schemaElement is one node of the flattened schema (depth-first order).
type schemaElement struct {
	name        string
	ptype       int32 // -1 for groups
	repetition  int32 // -1 for the root
	numChildren int32
	converted   int32
	logical     logical
}

func (t *thriftWriter) schemaElement(e *schemaElement) {
	t.beginElem()
	if e.ptype >= 0 {
		t.i32(1, e.ptype)
	}
	if e.repetition >= 0 {
		t.i32(3, e.repetition)
	}
	t.str(4, e.name)
	if e.ptype < 0 {
		t.i32(5, e.numChildren)
	}
	if e.converted >= 0 {
		t.i32(6, e.converted)
	}
	switch e.logical {
	case logString:
		t.beginStruct(10)
		t.emptyStruct(1)
		t.endStruct()
	case logMap:
		t.beginStruct(10)
		t.emptyStruct(2)
		t.endStruct()
	case logList:
		t.beginStruct(10)
		t.emptyStruct(3)
		t.endStruct()
	case logTimestampMicrosUTC:
		t.beginStruct(10)
		t.beginStruct(8) // TimestampType
		t.boolean(1, true)
		t.beginStruct(2) // TimeUnit
		t.emptyStruct(2) // MICROS
		t.endStruct()
		t.endStruct()
		t.endStruct()
	}
	t.endStruct()
}

// statistics is a column chunk's Statistics: the null count always, min and
// max (PLAIN-encoded, type-defined order) for numeric columns.
type statistics struct {
	nullCount int64
	hasMinMax bool
	min, max  [8]byte
	size      int // bytes of min/max: 4 or 8
	// minB and maxB are a byte-array column's (Options.StatsColumns).
	minB, maxB []byte
}

// chunkMeta is a ColumnChunk with its ColumnMetaData.
type chunkMeta struct {
	ptype             int32
	encodings         []int32 // ascending, unique
	path              []string
	codec             int32
	numValues         int64
	totalUncompressed int64
	totalCompressed   int64
	dataPageOffset    int64
	dictPageOffset    int64 // -1 without a dictionary page
	stats             statistics
}

func (t *thriftWriter) columnChunk(c *chunkMeta) {
	t.beginElem()
	start := c.dataPageOffset
	if c.dictPageOffset >= 0 {
		start = c.dictPageOffset
	}
	t.i64(2, start) // file_offset: where the chunk begins
	t.beginStruct(3)
	t.i32(1, c.ptype)
	t.list(2, tcI32, len(c.encodings))
	for _, e := range c.encodings {
		t.varint(int64(e))
	}
	t.list(3, tcBinary, len(c.path))
	for _, p := range c.path {
		t.uvarint(uint64(len(p)))
		t.buf = append(t.buf, p...)
	}
	t.i32(4, c.codec)
	t.i64(5, c.numValues)
	t.i64(6, c.totalUncompressed)
	t.i64(7, c.totalCompressed)
	t.i64(9, c.dataPageOffset)
	if c.dictPageOffset >= 0 {
		t.i64(11, c.dictPageOffset)
	}
	t.beginStruct(12)
	t.i64(3, c.stats.nullCount)
	switch {
	case c.stats.hasMinMax && c.stats.minB != nil:
		t.binary(5, c.stats.maxB)
		t.binary(6, c.stats.minB)
	case c.stats.hasMinMax:
		t.binary(5, c.stats.max[:c.stats.size])
		t.binary(6, c.stats.min[:c.stats.size])
	}
	t.endStruct()
	t.endStruct()
	t.endStruct()
}

// rowGroupMeta is a RowGroup.
type rowGroupMeta struct {
	columns         []chunkMeta
	totalByteSize   int64 // uncompressed
	totalCompressed int64
	numRows         int64
	fileOffset      int64
	ordinal         int16
}

func (t *thriftWriter) rowGroup(g *rowGroupMeta) {
	t.beginElem()
	t.list(1, tcStruct, len(g.columns))
	for i := range g.columns {
		t.columnChunk(&g.columns[i])
	}
	t.i64(2, g.totalByteSize)
	t.i64(3, g.numRows)
	t.i64(5, g.fileOffset)
	t.i64(6, g.totalCompressed)
	t.field(7, tcI16)
	t.varint(int64(g.ordinal))
	t.endStruct()
}

// fileMetaData writes the footer's FileMetaData.
func (t *thriftWriter) fileMetaData(schema []schemaElement, numRows int64, groups []rowGroupMeta, leaves int) {
	t.i32(1, 1) // version
	t.list(2, tcStruct, len(schema))
	for i := range schema {
		t.schemaElement(&schema[i])
	}
	t.i64(3, numRows)
	t.list(4, tcStruct, len(groups))
	for i := range groups {
		t.rowGroup(&groups[i])
	}
	t.str(6, CreatedBy)
	// column_orders: TYPE_ORDER for every leaf, so that readers trust
	// min_value/max_value.
	t.list(7, tcStruct, leaves)
	for range leaves {
		t.beginElem()
		t.emptyStruct(1)
		t.endStruct()
	}
	t.stop()
}

// dataPageHeader writes a PageHeader for a v1 data page.
func (t *thriftWriter) dataPageHeader(uncompressed, compressed, numValues int, encoding int32) {
	t.i32(1, pageData)
	t.i32(2, clampI32(uncompressed))
	t.i32(3, clampI32(compressed))
	t.beginStruct(5)
	t.i32(1, clampI32(numValues))
	t.i32(2, encoding)
	t.i32(3, encRLE) // definition levels
	t.i32(4, encRLE) // repetition levels
	t.endStruct()
	t.stop()
}

// dictPageHeader writes a PageHeader for a PLAIN dictionary page.
func (t *thriftWriter) dictPageHeader(uncompressed, compressed, numValues int) {
	t.i32(1, pageDictionary)
	t.i32(2, clampI32(uncompressed))
	t.i32(3, clampI32(compressed))
	t.beginStruct(7)
	t.i32(1, clampI32(numValues))
	t.i32(2, encPlain)
	t.endStruct()
	t.stop()
}
