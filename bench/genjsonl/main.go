// Command genjsonl writes the JSON lines landing files of bench/ingest.sh:
// RECORDS records in FILES files OUT/part-00000.jsonl..., deterministic
// (file k is seeded with k), one object a line:
//
//	{"event_id":"<uuid>","list_id":123,"subscriber_id":"<uuid>","tally":1,"event_time":"2024-01-05T12:34:56.123456Z"}
//
// event_time spreads the records over the 10 days from 2024-01-01 in landing
// order (file k holds the k-th slice of the span), each jittered by up to one
// minute, so most files fall in one day and a few straddle two.
//
// Usage: go run ./bench/genjsonl RECORDS FILES OUT
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: genjsonl RECORDS FILES OUT")
		os.Exit(2)
	}
	records, err1 := strconv.ParseInt(os.Args[1], 10, 64)
	files, err2 := strconv.ParseInt(os.Args[2], 10, 64)
	if err1 != nil || err2 != nil || records < 1 || files < 1 || files > records {
		fmt.Fprintln(os.Stderr, "genjsonl: RECORDS and FILES must be positive, FILES <= RECORDS")
		os.Exit(2)
	}
	out := os.Args[3]
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const span = 10 * 24 * time.Hour
	jobs := make(chan int64)
	errs := make(chan error, files)
	var wg sync.WaitGroup
	for w := 0; w < runtime.NumCPU(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				lo := k * records / files
				hi := (k + 1) * records / files
				errs <- writeFile(filepath.Join(out, fmt.Sprintf("part-%05d.jsonl", k)), uint64(k), lo, hi, records, base, span)
			}
		}()
	}
	for k := int64(0); k < files; k++ {
		jobs <- k
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func writeFile(path string, seed uint64, lo, hi, records int64, base time.Time, span time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	var u [16]byte
	uuid := func(b []byte) []byte {
		for i := 0; i < 16; i += 8 {
			x := r.Uint64()
			for j := 0; j < 8; j++ {
				u[i+j] = byte(x >> (8 * j))
			}
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		var s [36]byte
		hex.Encode(s[0:8], u[0:4])
		s[8] = '-'
		hex.Encode(s[9:13], u[4:6])
		s[13] = '-'
		hex.Encode(s[14:18], u[6:8])
		s[18] = '-'
		hex.Encode(s[19:23], u[8:10])
		s[23] = '-'
		hex.Encode(s[24:36], u[10:16])
		return append(b, s[:]...)
	}
	for i := lo; i < hi; i++ {
		off := time.Duration(float64(span) * float64(i) / float64(records))
		jitter := time.Duration(r.Int64N(int64(time.Minute)/1000)) * time.Microsecond
		t := base.Add(off.Truncate(time.Microsecond) + jitter)
		if !t.Before(base.Add(span)) {
			t = base.Add(span - time.Microsecond)
		}
		buf = append(buf[:0], `{"event_id":"`...)
		buf = uuid(buf)
		buf = append(buf, `","list_id":`...)
		buf = strconv.AppendInt(buf, 1+r.Int64N(5000), 10)
		buf = append(buf, `,"subscriber_id":"`...)
		buf = uuid(buf)
		buf = append(buf, `","tally":`...)
		buf = strconv.AppendInt(buf, 1+r.Int64N(10), 10)
		buf = append(buf, `,"event_time":"`...)
		buf = t.AppendFormat(buf, "2006-01-02T15:04:05.000000Z07:00")
		buf = append(buf, "\"}\n"...)
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
