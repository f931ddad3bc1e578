package icebergtest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
)

// Days is how many days the rows' timestamps spread over, from Start: the
// day(ts) partitions a table gets.
const Days = 10

// Start is the first instant of the rows' timestamps (UTC midnight).
var Start = time.Date(2024, time.March, 1, 0, 0, 0, 0, time.UTC)

// schema is the foreign tables' schema. The ids here are placeholders:
// the catalog assigns fresh ones when it creates the table, as it does for
// any writer.
func schema() *ice.Schema {
	str := ice.PrimitiveTypes.String
	return ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 2, Name: "ts", Type: ice.PrimitiveTypes.TimestampTz, Required: true},
		ice.NestedField{ID: 3, Name: "region", Type: str},
		ice.NestedField{ID: 4, Name: "user_agent", Type: str},
		ice.NestedField{ID: 5, Name: "amount", Type: ice.DecimalTypeOf(12, 2)},
		ice.NestedField{ID: 6, Name: "attrs", Type: &ice.StructType{FieldList: []ice.NestedField{
			{ID: 11, Name: "k", Type: str},
			{ID: 12, Name: "n", Type: ice.PrimitiveTypes.Int32},
		}}},
		ice.NestedField{ID: 7, Name: "tags", Type: &ice.ListType{ElementID: 13, Element: str}},
		ice.NestedField{ID: 8, Name: "props", Type: &ice.MapType{KeyID: 14, KeyType: str, ValueID: 15, ValueType: str}},
		ice.NestedField{ID: 9, Name: "ok", Type: ice.PrimitiveTypes.Bool},
		ice.NestedField{ID: 10, Name: "day", Type: ice.PrimitiveTypes.Date},
	)
}

// Regions are the values of the region column, most frequent first: the
// first two hold about three rows in four (skewed keys, as real traffic
// has them). About one row in thirty has no region.
var Regions = []string{"us-east-1", "eu-west-1", "ap-south-1", "sa-east-1", "af-south-1", "me-central-1"}

var regionWeights = []int{50, 25, 10, 6, 4, 2}

// userAgents are payloads as real logs carry them: quotes, backslashes,
// newlines, tabs, control characters, JSON inside, non-ASCII text and
// emoji, an empty string.
var userAgents = []string{
	`Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0`,
	`Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36`,
	`curl/8.5.0`,
	`python-requests/2.31.0 "quoted" and 'single'`,
	`C:\Program Files\Agent\agent.exe \"escaped\" \\server\share`,
	"multi\nline\r\nagent\twith tab",
	`{"json": "inside", "n": [1, 2, 3], "esc": "a\"b"}`,
	"Ünïcödé-Browser/1.0 (日本語; ελληνικά; русский)",
	"bot 🤖 / 🚀 crawler",
	"",
	"trailing backslash \\",
	"nul-free control \x01\x1f chars",
	`<script>alert("x")</script>`,
	"comma, separated; values | pipes",
}

var tagWords = []string{"mobile", "web", "beta", "returning", "vip", "trial", "tag with space", `quo"te`, "ünï"}

// pickRegion returns a region with the skewed weights, or nil.
func pickRegion(r *rand.Rand) *string {
	if r.IntN(30) == 0 {
		return nil
	}
	n := r.IntN(97)
	for i, w := range regionWeights {
		if n < w {
			return &Regions[i]
		}
		n -= w
	}
	return &Regions[0]
}

// batch builds rows rows of the table's schema, ids counting from firstID,
// their content drawn from seed: the same arguments give the same rows.
// sc is the Arrow schema of the table (table.SchemaToArrowSchema).
func batch(sc *arrow.Schema, seed int64, firstID int64, rows int) (arrow.Table, error) {
	r := rand.New(rand.NewPCG(uint64(seed), uint64(firstID)))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range rows {
		id := firstID + int64(i)
		ts := Start.Add(time.Duration(r.Int64N(int64(Days*24*time.Hour/time.Microsecond))) * time.Microsecond)
		for c, f := range sc.Fields() {
			if err := appendValue(b.Field(c), f.Name, r, id, ts); err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec}), nil
}

// appendValue appends one value of the column name to fb.
func appendValue(fb array.Builder, name string, r *rand.Rand, id int64, ts time.Time) error {
	bad := func() error { return fmt.Errorf("unexpected Arrow builder %T", fb) }
	switch name {
	case "id":
		b, ok := fb.(*array.Int64Builder)
		if !ok {
			return bad()
		}
		b.Append(id)
	case "ts":
		b, ok := fb.(*array.TimestampBuilder)
		if !ok {
			return bad()
		}
		b.Append(arrow.Timestamp(ts.UnixMicro()))
	case "region":
		b, ok := fb.(*array.StringBuilder)
		if !ok {
			return bad()
		}
		if reg := pickRegion(r); reg != nil {
			b.Append(*reg)
		} else {
			b.AppendNull()
		}
	case "user_agent":
		b, ok := fb.(*array.StringBuilder)
		if !ok {
			return bad()
		}
		if r.IntN(10) == 0 {
			b.AppendNull()
		} else {
			b.Append(userAgents[r.IntN(len(userAgents))])
		}
	case "amount":
		b, ok := fb.(*array.Decimal128Builder)
		if !ok {
			return bad()
		}
		switch r.IntN(20) {
		case 0:
			b.AppendNull()
		case 1: // refunds
			b.Append(decimal128.FromI64(-r.Int64N(1_000_00)))
		case 2: // the extremes of decimal(12,2)
			b.Append(decimal128.FromI64(999_999_999_999))
		default:
			b.Append(decimal128.FromI64(r.Int64N(50_000_00)))
		}
	case "attrs":
		b, ok := fb.(*array.StructBuilder)
		if !ok {
			return bad()
		}
		if r.IntN(8) == 0 {
			b.AppendNull()
			return nil
		}
		b.Append(true)
		k, ok1 := b.FieldBuilder(0).(*array.StringBuilder)
		n, ok2 := b.FieldBuilder(1).(*array.Int32Builder)
		if !ok1 || !ok2 {
			return bad()
		}
		if r.IntN(5) == 0 {
			k.AppendNull()
		} else {
			k.Append(fmt.Sprintf("k%d", r.IntN(50)))
		}
		if r.IntN(6) == 0 {
			n.AppendNull()
		} else {
			n.Append(r.Int32() - 1<<30)
		}
	case "tags":
		b, ok := fb.(*array.ListBuilder)
		if !ok {
			return bad()
		}
		if r.IntN(7) == 0 {
			b.AppendNull()
			return nil
		}
		b.Append(true)
		vb, ok := b.ValueBuilder().(*array.StringBuilder)
		if !ok {
			return bad()
		}
		for range r.IntN(4) { // empty lists too
			if r.IntN(15) == 0 {
				vb.AppendNull()
			} else {
				vb.Append(tagWords[r.IntN(len(tagWords))])
			}
		}
	case "props":
		b, ok := fb.(*array.MapBuilder)
		if !ok {
			return bad()
		}
		if r.IntN(6) == 0 {
			b.AppendNull()
			return nil
		}
		b.Append(true)
		kb, ok1 := b.KeyBuilder().(*array.StringBuilder)
		ib, ok2 := b.ItemBuilder().(*array.StringBuilder)
		if !ok1 || !ok2 {
			return bad()
		}
		for j := range r.IntN(4) {
			kb.Append(fmt.Sprintf("p%d", j))
			if r.IntN(8) == 0 {
				ib.AppendNull()
			} else {
				ib.Append(fmt.Sprintf("v=%d \"%d\"", r.IntN(1000), j))
			}
		}
	case "ok":
		b, ok := fb.(*array.BooleanBuilder)
		if !ok {
			return bad()
		}
		if r.IntN(9) == 0 {
			b.AppendNull()
		} else {
			b.Append(r.IntN(4) != 0)
		}
	case "day":
		b, ok := fb.(*array.Date32Builder)
		if !ok {
			return bad()
		}
		if r.IntN(25) == 0 {
			b.AppendNull()
		} else {
			b.Append(arrow.Date32FromTime(ts))
		}
	default:
		return fmt.Errorf("no generator for column %q", name)
	}
	return nil
}
