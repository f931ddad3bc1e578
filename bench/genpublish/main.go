// Command genpublish writes the table of bench/publish.sh and the same
// rows as CSV for psql's \copy: ROWS rows, deterministic (row i is a
// function of i), in one version of a sluice table at TABLE (files of
// 1M rows at most, so the generator holds one file's rows at a time) and
// in CSV at CSVFILE, in PostgreSQL's text forms:
//
//	id bigint, u uuid, ts timestamptz, amount numeric(12,2), n integer, f double precision, s text
//
// Usage: go run ./bench/genpublish ROWS TABLE CSVFILE
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/sluice-data/sluice/catalog"
)

// Schema is the table's schema, as sluice init takes it.
const Schema = "id:int64,u:uuid,ts:timestamp,amount:decimal(12,2),n:int32,f:float64,s:string?"

const perFile = 1_000_000

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: genpublish ROWS TABLE CSVFILE")
		os.Exit(2)
	}
	rows, err := strconv.ParseInt(os.Args[1], 10, 64)
	if err != nil || rows < 1 {
		fmt.Fprintln(os.Stderr, "genpublish: ROWS must be a positive number")
		os.Exit(2)
	}
	if err := run(context.Background(), rows, os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "genpublish:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, rows int64, loc, csvPath string) error {
	sc, err := catalog.ParseSchema(Schema)
	if err != nil {
		return err
	}
	tbl, err := catalog.Open(ctx, loc, catalog.Options{})
	if err != nil {
		return err
	}
	defer tbl.Close()
	m, err := tbl.Create(ctx, sc, catalog.PartitionSpec{}, nil, "genpublish")
	if err != nil {
		return err
	}
	f, err := os.Create(csvPath)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var added []catalog.DataFile
	for lo := int64(0); lo < rows; lo += perFile {
		hi := min(lo+perFile, rows)
		batch := make([][]any, 0, hi-lo)
		for i := lo; i < hi; i++ {
			u := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(i*2654435761), uint16(i), i%4096, (i/7)%4096, i*40503)
			ts := base.Add(time.Duration(i) * 37 * time.Millisecond)
			amount := fmt.Sprintf("%d.%02d", (i*7919)%10_000_000, i%100)
			n := int32(i % 100_000)
			fl := float64(i) / 7
			var s any = fmt.Sprintf("customer %d, plan %c", i%50_000, 'a'+rune(i%26))
			sCSV := `"` + s.(string) + `"`
			if i%17 == 0 {
				s, sCSV = nil, ""
			}
			batch = append(batch, []any{i, u, ts, amount, n, fl, s})
			fmt.Fprintf(w, "%d,%s,%s,%s,%d,%s,%s\n", i, u, ts.Format("2006-01-02 15:04:05.000000Z07:00"), amount, n,
				strconv.FormatFloat(fl, 'g', -1, 64), sCSV)
		}
		files, err := tbl.WriteFiles(ctx, m, batch)
		if err != nil {
			return err
		}
		added = append(added, files...)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err = tbl.Commit(ctx, catalog.Change{Operation: "append", RunID: "genpublish", Add: added, DataChange: true})
	return err
}
