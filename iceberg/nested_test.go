package iceberg_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/internal/pqio"
)

// TestIcebergSyncNestedColumns: struct, list and map columns (nested in
// each other, NULL at every level) are mirrored as Iceberg's struct, list
// and map, required where sluice's are not nullable; the name mapping
// that readers of sluice's files (which carry no field ids) need names
// every nested field; and icebird reads every version as DuckDB reads
// `sluice files`.
func TestIcebergSyncNestedColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tbl, m := newTable(t, ctx, filepath.Join(dir, "orders"), "id:int64,at:timestamp,customer:struct<name:string,address:struct<city:string?,zip:int32?>?>?,"+
		"items:list<struct<sku:string,qty:int32>?>?,attrs:map<string,list<int64>?>?,tags:list<string>", "day(at)")
	day := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	row := func(i int64) []any {
		var customer, items, attrs any
		switch i % 4 {
		case 1:
			customer = map[string]any{"name": fmt.Sprintf("c%d", i), "address": nil}
			items = []any{}
			attrs = []pqio.MapEntry{}
		case 2:
			customer = map[string]any{"name": "Zoë", "address": map[string]any{"city": "Köln", "zip": int32(50667)}}
			items = []any{map[string]any{"sku": "a", "qty": int32(1)}, nil, map[string]any{"sku": "b", "qty": int32(i)}}
			attrs = []pqio.MapEntry{{Key: "x", Value: []any{int64(1), int64(2)}}, {Key: "y", Value: nil}}
		case 3:
			customer = map[string]any{"name": "n", "address": map[string]any{"city": nil, "zip": nil}}
			items = []any{map[string]any{"sku": "c", "qty": int32(3)}}
			attrs = []pqio.MapEntry{{Key: "z", Value: []any{}}}
		}
		return []any{i, day.Add(time.Duration(i) * time.Hour), customer, items, attrs, []any{"t", fmt.Sprint(i)}}
	}
	for _, batch := range [][2]int64{{0, 30}, {30, 30}} { // v2, v3 (into a second day)
		var rows [][]any
		for i := batch[0]; i < batch[0]+batch[1]; i++ {
			rows = append(rows, row(i))
		}
		m, _ = appendRows(t, ctx, tbl, m, rows)
	}
	cat := sqliteCatalog(t, ctx, dir)
	res, err := iceberg.Sync(ctx, tbl, cat, iceberg.Options{Namespace: "lake", Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mirrored != 3 {
		t.Fatalf("sync: %+v", res)
	}
	checkMirror(t, ctx, tbl, res.MetadataLocation, nil)

	it, err := cat.Load(ctx, table.Identifier{"lake", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"customer": "struct<1: name: required string, 2: address: optional struct<3: city: optional string, 4: zip: optional int>>",
		"items":    "list<struct<1: sku: required string, 2: qty: required int>>",
		"attrs":    "map<string, list<long>>",
		"tags":     "list<string>",
	}
	for name, w := range want {
		f, ok := it.Schema().FindFieldByName(name)
		if !ok {
			t.Fatalf("the mirror has no column %q: %s", name, it.Schema())
		}
		if got := stripIDs(f.Type.String()); got != stripIDs(w) {
			t.Errorf("column %s is %s, want %s", name, f.Type, w)
		}
	}
	checkRequired := func(path string, want bool) {
		t.Helper()
		f, ok := it.Schema().FindFieldByName(path)
		if !ok {
			t.Fatalf("the mirror has no field %q: %s", path, it.Schema())
		}
		if f.Required != want {
			t.Errorf("%s: required %v, want %v", path, f.Required, want)
		}
	}
	checkRequired("customer", false)
	checkRequired("customer.name", true)
	checkRequired("customer.address.zip", false)
	checkRequired("tags", true)
	for _, path := range []string{"items", "attrs"} {
		f, _ := it.Schema().FindFieldByName(path)
		switch ft := f.Type.(type) {
		case *ice.ListType:
			if ft.ElementRequired {
				t.Errorf("%s: elements required, but sluice's may be NULL", path)
			}
		case *ice.MapType:
			if ft.ValueRequired {
				t.Errorf("%s: values required, but sluice's may be NULL", path)
			}
		}
	}
	mapping := it.Properties()[table.DefaultNameMappingKey]
	for _, name := range []string{`"address"`, `"city"`, `"element"`, `"key"`, `"value"`, `"sku"`} {
		if !strings.Contains(mapping, name) {
			t.Errorf("the name mapping has no %s: %s", name, mapping)
		}
	}
}

// stripIDs drops the "N: " field ids of an Iceberg type's text, which are
// Iceberg's to assign.
func stripIDs(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' && (i == 0 || s[i-1] == '<' || s[i-1] == ' ') {
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if strings.HasPrefix(s[j:], ": ") {
				i = j + 1
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
