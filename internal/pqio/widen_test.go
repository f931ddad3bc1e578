package pqio

import (
	"reflect"
	"testing"
)

func TestWidenValues(t *testing.T) {
	mustType := func(s string) Type {
		t.Helper()
		ty, err := ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		return ty
	}
	for _, c := range []struct {
		from, to string
		in, want any
	}{
		{"int32", "int64", int32(-7), int64(-7)},
		{"int32", "float64", int32(3), float64(3)},
		{"int64", "decimal(21,2)", int64(-12), "-12.00"},
		{"decimal(10,2)", "decimal(20,5)", "1.25", "1.25000"},
		{"list<int32>", "list<int64>", []any{int32(1), nil, int32(2)}, []any{int64(1), nil, int64(2)}},
		{"map<string,int32>", "map<string,decimal(12,1)>", []MapEntry{{Key: "a", Value: int32(4)}}, []MapEntry{{Key: "a", Value: "4.0"}}},
		{"struct<a:int32,b:list<int32>>", "struct<a:int64,b:list<int64>,c:string?>",
			map[string]any{"a": int32(1), "b": []any{int32(2)}}, map[string]any{"a": int64(1), "b": []any{int64(2)}}},
	} {
		from, to := mustType(c.from), mustType(c.to)
		if !readableAs(from, to) {
			t.Fatalf("%s is not readable as %s", from, to)
		}
		w := Widen(from, to)
		if w == nil {
			t.Fatalf("%s → %s: no conversion", from, to)
		}
		if got := w(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s → %s: %#v gives %#v, want %#v", from, to, c.in, got, c.want)
		}
		if w(nil) != nil {
			t.Errorf("%s → %s: nil is not nil", from, to)
		}
	}
	for _, same := range []string{"string", "struct<a:string,b:list<int64>>", "map<string,int64>"} {
		if w := Widen(mustType(same), mustType(same)); w != nil {
			t.Errorf("%s → itself: a conversion", same)
		}
	}
}
