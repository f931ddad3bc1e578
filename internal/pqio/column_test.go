package pqio

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

func TestScanParquetColumnReadsOneColumnAsTheTableTypesIt(t *testing.T) {
	ctx := context.Background()
	st := newTestStore(t)
	file := pqSchema(t, "s:string,i:int32?")
	var rows [][]any
	for k := range 3000 {
		var v any = int32(k)
		if k%1000 == 7 {
			v = nil
		}
		rows = append(rows, []any{"a wide column we never read", v})
	}
	n, _, err := WriteParquet(ctx, st, "c.parquet", file, rows)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		col     Column
		want    func(k int) any
		wantErr error
	}{
		"values in row order, NULL as nil, widened to the table's type": {
			col: Column{Name: "i", Type: Type{Kind: KindInt64}, Nullable: true},
			want: func(k int) any {
				if k%1000 == 7 {
					return nil
				}
				return int64(k)
			},
		},
		"a column the file lacks reads as NULL in every row": {
			col:  Column{Name: "added_later", Type: Type{Kind: KindString}, Nullable: true},
			want: func(int) any { return nil },
		},
		"a type the file's column does not convert to is refused": {
			col:     Column{Name: "s", Type: Type{Kind: KindInt64}},
			wantErr: ErrIncompatibleSchema,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var got []any
			err := ScanParquetColumn(ctx, st, "c.parquet", n, c.col, func(v any) error {
				got = append(got, v)
				return nil
			})
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []any
			for k := range rows {
				want = append(want, c.want(k))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %d values %v..., want %d", len(got), got[:min(len(got), 10)], len(want))
			}
		})
	}
	stop := errors.New("stop")
	if err := ScanParquetColumn(ctx, st, "c.parquet", n, Column{Name: "i", Type: Type{Kind: KindInt32}, Nullable: true},
		func(any) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("fn's error came back as %v", err)
	}
}
