// Command genjsonl writes the JSON lines landing files of bench/ingest.sh
// and bench/kafka.sh: RECORDS records in FILES files OUT/part-00000.jsonl...,
// deterministic (file k is seeded with k), one object a line, of one of two
// shapes.
//
// flat: five fields, strings without escapes, integers:
//
//	{"event_id":"<uuid>","list_id":123,"subscriber_id":"<uuid>","tally":1,"event_time":"2024-01-05T12:34:56.123456Z"}
//
// events (the default): the flat fields, then what events as users send
// them carry besides:
//
//	"payload":"{\"ip\":\"10.1.2.3\",\"path\":\"/api/v1/items/123\",...}"  a JSON document kept as a string (about 90 bytes, escaped)
//	"user_agent":"Mozilla/5.0 (...) ..."                         one of a few browsers' and clients'
//	"subject":"Re: \"Ihre Bestellung\" — café ..."             quoted text, non-ASCII text as UTF-8, and as \uXXXX escapes (surrogate pairs too), \n, \t, \\, \/
//	"context":{"country":"DE","city":"München","device":{...}}  a nested object
//	"tags":["promo","mobile"]                                   an array of zero to three strings
//
// The nested object and the array are written compact, their strings
// without escapes and their numbers as integers: the form both DuckDB
// (which normalises a nested value it reads as text) and sluice (which
// keeps it as written, whitespace dropped) store, so that the benchmarks'
// checksums compare them.
//
// event_time spreads the records over the 10 days from 2024-01-01 in landing
// order (file k holds the k-th slice of the span), each jittered by up to one
// minute, so most files fall in one day and a few straddle two.
//
// Usage: go run ./bench/genjsonl [-shape events|flat] RECORDS FILES OUT
package main

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	shape := flag.String("shape", "events", "the records' shape: events or flat")
	flag.Parse()
	if flag.NArg() != 3 || (*shape != "events" && *shape != "flat") {
		fmt.Fprintln(os.Stderr, "usage: genjsonl [-shape events|flat] RECORDS FILES OUT")
		os.Exit(2)
	}
	records, err1 := strconv.ParseInt(flag.Arg(0), 10, 64)
	files, err2 := strconv.ParseInt(flag.Arg(1), 10, 64)
	if err1 != nil || err2 != nil || records < 1 || files < 1 || files > records {
		fmt.Fprintln(os.Stderr, "genjsonl: RECORDS and FILES must be positive, FILES <= RECORDS")
		os.Exit(2)
	}
	out := flag.Arg(2)
	events := *shape == "events"
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
				errs <- writeFile(filepath.Join(out, fmt.Sprintf("part-%05d.jsonl", k)), uint64(k), lo, hi, records, base, span, events)
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

func writeFile(path string, seed uint64, lo, hi, records int64, base time.Time, span time.Duration, events bool) error {
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
		buf = append(buf, '"')
		if events {
			buf = appendEvent(buf, r)
		}
		buf = append(buf, "}\n"...)
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

// userAgents are the user agents of the events records.
var userAgents = []string{
	`Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36`,
	`Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1`,
	`Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.3 Safari/605.1.15`,
	`Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0`,
	`Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.82 Mobile Safari/537.36`,
	`okhttp/4.12.0`,
	`Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17531; Pro)`,
	`curl/8.5.0`,
}

// subjects are the texts of the events records' subject field, as written
// in the JSON text: quotes, non-ASCII text both as UTF-8 and as \u
// escapes (a surrogate pair among them), and the other escapes.
var subjects = []string{
	`Re: \"Ihre Bestellung\" ist unterwegs`,
	`Your order #{n} has shipped`,
	`Grüße aus München — 20% Rabatt`,
	`caf\u00e9 cr\u00e8me: la s\u00e9lection d'\u00e9t\u00e9`,
	`\ud83d\ude80 Launch day! \ud83c\udf89`,
	`セール開始のお知らせ`,
	`Line one\nLine two\twith a tab`,
	`Path C:\\Users\\shared and https:\/\/example.com\/a`,
	`\"Quoted\" and \u201csmart\u201d quotes`,
	`Weekly digest`,
}

var (
	countries = []string{"DE", "FR", "JP", "US", "BR", "IN"}
	cities    = []string{"München", "Lyon", "東京", "Austin", "São Paulo", "Bengaluru"}
	devices   = []string{`{"type":"mobile","os":"iOS"}`, `{"type":"desktop","os":"Windows"}`, `{"type":"mobile","os":"Android"}`, `{"type":"tablet","os":"iPadOS"}`}
	tagNames  = []string{"promo", "mobile", "newsletter", "vip", "retry", "beta"}
	paths     = []string{"/api/v1/items/", "/checkout/", "/u/profile/", "/search?q=shoes&page="}
)

// appendEvent appends the fields past event_time of an events record,
// each after a comma.
func appendEvent(b []byte, r *rand.Rand) []byte {
	// payload: a JSON document kept as a string, so every quote in it is
	// escaped.
	b = append(b, `,"payload":"{\"ip\":\"10.`...)
	for k := 0; k < 3; k++ {
		if k > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, r.Int64N(256), 10)
	}
	b = append(b, `\",\"path\":\"`...)
	b = append(b, paths[r.IntN(len(paths))]...)
	b = strconv.AppendInt(b, r.Int64N(100000), 10)
	b = append(b, `\",\"status\":`...)
	b = strconv.AppendInt(b, []int64{200, 200, 200, 201, 304, 404, 500}[r.IntN(7)], 10)
	b = append(b, `,\"ms\":`...)
	b = strconv.AppendInt(b, r.Int64N(2000), 10)
	b = append(b, `,\"ref\":\"email\"}","user_agent":"`...)
	b = append(b, userAgents[r.IntN(len(userAgents))]...)
	b = append(b, `","subject":"`...)
	subj := subjects[r.IntN(len(subjects))]
	if i := strings.Index(subj, "{n}"); i >= 0 {
		b = append(b, subj[:i]...)
		b = strconv.AppendInt(b, r.Int64N(1000000), 10)
		b = append(b, subj[i+3:]...)
	} else {
		b = append(b, subj...)
	}
	c := r.IntN(len(countries))
	b = append(b, `","context":{"country":"`...)
	b = append(b, countries[c]...)
	b = append(b, `","city":"`...)
	b = append(b, cities[c]...)
	b = append(b, `","device":`...)
	b = append(b, devices[r.IntN(len(devices))]...)
	b = append(b, `,"campaign":`...)
	b = strconv.AppendInt(b, r.Int64N(500), 10)
	b = append(b, `},"tags":[`...)
	for k, n := 0, r.IntN(4); k < n; k++ {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, tagNames[r.IntN(len(tagNames))]...)
		b = append(b, '"')
	}
	return append(b, ']')
}
