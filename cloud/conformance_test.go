package cloud_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// conformance holds the cases every Store must pass, run against local
// disk, the S3 server and Azurite alike (objtesting.ForeachStore style).
// Each case gets a fresh, empty store.
var conformance = map[string]func(t *testing.T, st cloud.Store, loc string){
	"a put object reads back whole":                     testRoundTrip,
	"GetRange reads the middle and to the end":          testGetRange,
	"Stat reports size and the etag Put returned":       testStat,
	"List walks nested keys under a prefix in order":    testList,
	"List stops at fn's error and returns it":           testListStops,
	"Delete is idempotent":                              testDelete,
	"a missing key is ErrNotFound":                      testNotFound,
	"a create-only put fails on an existing key":        testCreateOnly,
	"of racing create-only puts exactly one wins":       testCreateRace,
	"compare-and-swap takes the current etag only":      testCompareAndSwap,
	"IfMatch on a missing key is refused":               testIfMatchMissing,
	"a reader never sees a partial object":              testNoPartialReads,
	"URL names the object as users write it":            testURL,
	"invalid keys are refused the same everywhere":      testInvalidKeys,
	"a body bigger than one part is stored whole":       testBigBody,
	"a body shorter than its stated size is not stored": testShortBody,
	"a staged file is stored from where it is read":     testPutFromFile,
	"PutFile stores a finished file whole":              testPutFile,
}

func TestConformance(t *testing.T) {
	for _, kind := range testenv.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			for name, fn := range conformance {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					loc := testenv.Location(t, kind)
					fn(t, openStore(t, loc, cloud.DefaultOptions()), loc)
				})
			}
		})
	}
}

func openStore(t testing.TB, loc string, opts cloud.Options) cloud.Store {
	t.Helper()
	st, err := cloud.OpenWithOptions(context.Background(), loc, opts)
	if err != nil {
		t.Fatalf("open %s: %v", loc, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func put(t testing.TB, st cloud.Store, key string, body []byte, opts cloud.PutOptions) cloud.ObjectInfo {
	t.Helper()
	info, err := st.Put(context.Background(), key, bytes.NewReader(body), int64(len(body)), opts)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return info
}

func get(t testing.TB, st cloud.Store, key string) []byte {
	t.Helper()
	rc, _, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

func listKeys(t testing.TB, st cloud.Store, prefix string) []string {
	t.Helper()
	var keys []string
	err := st.List(context.Background(), prefix, func(o cloud.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		t.Fatalf("list %q: %v", prefix, err)
	}
	return keys
}

func testRoundTrip(t *testing.T, st cloud.Store, _ string) {
	ctx := context.Background()
	body := []byte("hello, lake\n")
	info := put(t, st, "_sluice/v/1.json", body, cloud.PutOptions{})
	if info.Key != "_sluice/v/1.json" || info.Size != int64(len(body)) || info.ETag == "" {
		t.Errorf("Put returned %+v", info)
	}
	rc, ginfo, err := st.Get(ctx, "_sluice/v/1.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Get = %q, %v; want %q", got, err, body)
	}
	if ginfo.Size != int64(len(body)) || ginfo.ETag != info.ETag {
		t.Errorf("Get info %+v; Put info %+v", ginfo, info)
	}
	// An empty object and a nil reader are fine too.
	if _, err := st.Put(ctx, "empty", nil, 0, cloud.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := get(t, st, "empty"); len(got) != 0 {
		t.Errorf("empty object reads %q", got)
	}
	// Overwrite replaces.
	put(t, st, "_sluice/v/1.json", []byte("v2"), cloud.PutOptions{})
	if got := get(t, st, "_sluice/v/1.json"); string(got) != "v2" {
		t.Errorf("after overwrite: %q", got)
	}
}

func testGetRange(t *testing.T, st cloud.Store, _ string) {
	body := make([]byte, 100)
	for i := range body {
		body[i] = byte(i)
	}
	put(t, st, "r", body, cloud.PutOptions{})
	for _, c := range []struct {
		name        string
		off, length int64
		want        []byte
	}{
		{"the middle", 10, 5, body[10:15]},
		{"to the end", 90, -1, body[90:]},
		{"all of it", 0, -1, body},
		{"nothing", 50, 0, nil},
		{"a length past the end is cut at the end", 95, 50, body[95:]},
	} {
		rc, err := st.GetRange(context.Background(), "r", c.off, c.length)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: GetRange(%d, %d) = %v, %v; want %v", c.name, c.off, c.length, got, err, c.want)
		}
	}
}

func testStat(t *testing.T, st cloud.Store, _ string) {
	before := time.Now().Add(-time.Minute)
	info := put(t, st, "a/b/c.parquet", []byte("12345"), cloud.PutOptions{})
	s, err := st.Stat(context.Background(), "a/b/c.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if s.Key != "a/b/c.parquet" || s.Size != 5 || s.ETag != info.ETag {
		t.Errorf("Stat = %+v; Put returned %+v", s, info)
	}
	if s.ModTime.Before(before) || s.ModTime.After(time.Now().Add(time.Minute)) {
		t.Errorf("ModTime %v is not about now", s.ModTime)
	}
	// A "folder" is no object.
	if _, err := st.Stat(context.Background(), "a/b"); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("Stat of a folder: %v, want ErrNotFound", err)
	}
}

func testList(t *testing.T, st cloud.Store, _ string) {
	keys := []string{
		"b", "a/c/d", "ab", "a.txt", "a/b", "a-", "date=2024-01-01/part-0.parquet",
		"date=2024-01-01/part-1.parquet", "date=2024-01-02/part-0.parquet", "_sluice/v/00000000000000000001.json",
	}
	for _, k := range keys {
		put(t, st, k, []byte(k), cloud.PutOptions{})
	}
	all := slices.Clone(keys)
	slices.Sort(all)
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"a", []string{"a-", "a.txt", "a/b", "a/c/d", "ab"}},
		{"a/", []string{"a/b", "a/c/d"}},
		{"a/c", []string{"a/c/d"}},
		{"date=2024-01-01/", []string{"date=2024-01-01/part-0.parquet", "date=2024-01-01/part-1.parquet"}},
		{"date=", []string{"date=2024-01-01/part-0.parquet", "date=2024-01-01/part-1.parquet", "date=2024-01-02/part-0.parquet"}},
		{"zz", nil},
		{"nope/", nil},
	} {
		if got := listKeys(t, st, c.prefix); !slices.Equal(got, c.want) {
			t.Errorf("List(%q) = %q, want %q", c.prefix, got, c.want)
		}
	}
	// Infos carry size and etag.
	err := st.List(context.Background(), "a.txt", func(o cloud.ObjectInfo) error {
		if o.Size != int64(len("a.txt")) || o.ETag == "" || o.ModTime.IsZero() {
			t.Errorf("List info %+v", o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testListStops(t *testing.T, st cloud.Store, _ string) {
	for _, k := range []string{"x/1", "x/2", "x/3"} {
		put(t, st, k, nil, cloud.PutOptions{})
	}
	stop := errors.New("enough")
	var seen []string
	err := st.List(context.Background(), "x/", func(o cloud.ObjectInfo) error {
		seen = append(seen, o.Key)
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || len(seen) != 2 {
		t.Errorf("List = %v after %q; want %v after 2 keys", err, seen, stop)
	}
}

func testDelete(t *testing.T, st cloud.Store, _ string) {
	ctx := context.Background()
	put(t, st, "d/1", []byte("x"), cloud.PutOptions{})
	for i := 0; i < 2; i++ {
		if err := st.Delete(ctx, "d/1"); err != nil {
			t.Fatalf("delete #%d: %v", i+1, err)
		}
	}
	if err := st.Delete(ctx, "never/was"); err != nil {
		t.Errorf("delete of a key never written: %v", err)
	}
	if _, err := st.Stat(ctx, "d/1"); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("Stat after Delete: %v", err)
	}
	if got := listKeys(t, st, ""); len(got) != 0 {
		t.Errorf("List after Delete: %q", got)
	}
}

func testNotFound(t *testing.T, st cloud.Store, _ string) {
	ctx := context.Background()
	put(t, st, "there", []byte("x"), cloud.PutOptions{})
	_, _, err := st.Get(ctx, "missing/key")
	checkErr(t, "Get", err, cloud.ErrNotFound, st.URL("missing/key"))
	_, err = st.GetRange(ctx, "missing/key", 1, 2)
	checkErr(t, "GetRange", err, cloud.ErrNotFound, st.URL("missing/key"))
	_, err = st.Stat(ctx, "missing/key")
	checkErr(t, "Stat", err, cloud.ErrNotFound, st.URL("missing/key"))
	if errors.Is(err, cloud.ErrBucketNotFound) {
		t.Errorf("a missing key in an existing bucket is ErrBucketNotFound: %v", err)
	}
}

// checkErr wants err to wrap sentinel and to be one line naming url.
func checkErr(t testing.TB, what string, err, sentinel error, url string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: %v; want %v", what, err, sentinel)
		return
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Errorf("%s: error spans lines: %q", what, msg)
	}
	if !strings.Contains(msg, url) {
		t.Errorf("%s: error %q does not name %s", what, msg, url)
	}
}

func testCreateOnly(t *testing.T, st cloud.Store, _ string) {
	ctx := context.Background()
	put(t, st, "_sluice/v/1.json", []byte("first"), cloud.PutOptions{IfAbsent: true})
	_, err := st.Put(ctx, "_sluice/v/1.json", strings.NewReader("second"), 6, cloud.PutOptions{IfAbsent: true})
	checkErr(t, "second create", err, cloud.ErrPreconditionFailed, st.URL("_sluice/v/1.json"))
	if got := get(t, st, "_sluice/v/1.json"); string(got) != "first" {
		t.Errorf("after a lost create: %q", got)
	}
	// The loser left nothing behind (no temp files listed).
	if got := listKeys(t, st, ""); !slices.Equal(got, []string{"_sluice/v/1.json"}) {
		t.Errorf("List = %q", got)
	}
}

func testCreateRace(t *testing.T, st cloud.Store, _ string) {
	const writers = 8
	ctx := context.Background()
	start := make(chan struct{})
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			body := fmt.Sprintf("writer %d", i)
			_, errs[i] = st.Put(ctx, "_sluice/v/7.json", strings.NewReader(body), int64(len(body)), cloud.PutOptions{IfAbsent: true})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, cloud.ErrPreconditionFailed):
			t.Errorf("writer %d: %v; want ErrPreconditionFailed", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	if got, want := string(get(t, st, "_sluice/v/7.json")), fmt.Sprintf("writer %d", winner); got != want {
		t.Errorf("stored %q; the winner wrote %q", got, want)
	}
}

func testCompareAndSwap(t *testing.T, st cloud.Store, _ string) {
	ctx := context.Background()
	v1 := put(t, st, "lease", []byte("owner=a"), cloud.PutOptions{})
	v2 := put(t, st, "lease", []byte("owner=b"), cloud.PutOptions{IfMatch: v1.ETag})
	if v2.ETag == v1.ETag {
		t.Errorf("the etag did not change: %s", v2.ETag)
	}
	_, err := st.Put(ctx, "lease", strings.NewReader("owner=c"), 7, cloud.PutOptions{IfMatch: v1.ETag})
	checkErr(t, "stale swap", err, cloud.ErrPreconditionFailed, st.URL("lease"))
	if got := get(t, st, "lease"); string(got) != "owner=b" {
		t.Errorf("after a refused swap: %q", got)
	}
	// The etag Stat reports works as well as the one Put returned.
	s, err := st.Stat(ctx, "lease")
	if err != nil {
		t.Fatal(err)
	}
	put(t, st, "lease", []byte("owner=d"), cloud.PutOptions{IfMatch: s.ETag})
}

func testIfMatchMissing(t *testing.T, st cloud.Store, _ string) {
	other := put(t, st, "other", []byte("x"), cloud.PutOptions{})
	_, err := st.Put(context.Background(), "missing", strings.NewReader("y"), 1, cloud.PutOptions{IfMatch: other.ETag})
	checkErr(t, "swap of a missing key", err, cloud.ErrPreconditionFailed, st.URL("missing"))
	if _, err := st.Stat(context.Background(), "missing"); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("a refused swap created the key: %v", err)
	}
}

func testNoPartialReads(t *testing.T, st cloud.Store, _ string) {
	const size = 256 << 10
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	put(t, st, "hot", bytes.Repeat([]byte{'0'}, size), cloud.PutOptions{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				rc, _, err := st.Get(ctx, "hot")
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						bad = append(bad, err.Error())
						mu.Unlock()
					}
					return
				}
				b, err := io.ReadAll(rc)
				rc.Close()
				if ctx.Err() != nil {
					return
				}
				if err != nil || len(b) != size || bytes.Count(b, b[:1]) != size {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("read %d bytes, err %v", len(b), err))
					mu.Unlock()
				}
			}
		})
	}
	for i := range 20 {
		put(t, st, "hot", bytes.Repeat([]byte{byte('a' + i)}, size), cloud.PutOptions{})
	}
	cancel()
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("%d bad reads, first: %s", len(bad), bad[0])
	}
}

func testURL(t *testing.T, st cloud.Store, loc string) {
	got := st.URL("_sluice/v/1.json")
	if want := cloud.Join(loc, "_sluice/v/1.json"); got != want {
		t.Errorf("URL = %q, Join = %q", got, want)
	}
	switch {
	case strings.HasPrefix(loc, "s3://"), strings.HasPrefix(loc, "az://"):
		if want := loc + "/_sluice/v/1.json"; got != want {
			t.Errorf("URL = %q, want %q", got, want)
		}
	default:
		if want := filepath.Join(loc, "_sluice", "v", "1.json"); got != want {
			t.Errorf("URL = %q, want %q", got, want)
		}
	}
	// The URL opens: a store on it sees the same object.
	put(t, st, "_sluice/v/1.json", []byte("x"), cloud.PutOptions{})
	parent := openStore(t, st.URL("_sluice"), cloud.DefaultOptions())
	if got := get(t, parent, "v/1.json"); string(got) != "x" {
		t.Errorf("through %s: %q", st.URL("_sluice"), got)
	}
}

func testInvalidKeys(t *testing.T, st cloud.Store, _ string) {
	ctx := context.Background()
	for _, key := range []string{"", "/abs", "a//b", "a/../b", "./a", "a/", ".tmp-123", "x/.tmp-1"} {
		_, err := st.Put(ctx, key, strings.NewReader("x"), 1, cloud.PutOptions{})
		if !errors.Is(err, cloud.ErrInvalidKey) {
			t.Errorf("Put(%q): %v, want ErrInvalidKey", key, err)
		}
		if _, err := st.Stat(ctx, key); !errors.Is(err, cloud.ErrInvalidKey) {
			t.Errorf("Stat(%q): %v, want ErrInvalidKey", key, err)
		}
	}
}

// onlyReader hides every method but Read, so the store cannot seek.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func testBigBody(t *testing.T, st cloud.Store, _ string) {
	body := make([]byte, 17<<20+123) // more than one S3 part and Azure block
	for i := range body {
		body[i] = byte(i * 7)
	}
	info, err := st.Put(context.Background(), "big.parquet", onlyReader{bytes.NewReader(body)}, -1, cloud.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(body)) {
		t.Errorf("Put size %d, want %d", info.Size, len(body))
	}
	if got := get(t, st, "big.parquet"); !bytes.Equal(got, body) {
		t.Errorf("read back %d bytes, differing", len(got))
	}
	rc, err := st.GetRange(context.Background(), "big.parquet", 17<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	tail, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(tail, body[17<<20:]) {
		t.Errorf("tail: %d bytes, differing", len(tail))
	}
}

// testPutFromFile puts from an *os.File, as writers hand over the Parquet
// files they stage locally: the object is the file's bytes from its read
// offset on.
func testPutFromFile(t *testing.T, st cloud.Store, _ string) {
	body := make([]byte, 33<<20+5)
	for i := range body {
		body[i] = byte(i*13 + i>>16)
	}
	f, err := os.CreateTemp(t.TempDir(), "staged-*.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(body); err != nil {
		t.Fatal(err)
	}
	const skip = 1000 // a header the caller already consumed
	if _, err := f.Seek(skip, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	info, err := st.Put(context.Background(), "staged.parquet", f, int64(len(body)-skip), cloud.PutOptions{IfAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(body)-skip) {
		t.Errorf("Put size %d, want %d", info.Size, len(body)-skip)
	}
	if got := get(t, st, "staged.parquet"); !bytes.Equal(got, body[skip:]) {
		t.Errorf("read back %d bytes, differing from the file's %d", len(got), len(body)-skip)
	}
	// A cancelled put stores nothing.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Put(ctx, "cancelled.parquet", f, int64(len(body)), cloud.PutOptions{}); err == nil {
		t.Error("a put with a cancelled context succeeded")
	}
	if _, err := st.Stat(context.Background(), "cancelled.parquet"); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("after a cancelled put, Stat: %v, want ErrNotFound", err)
	}
}

// testPutFile hands PutFile a file as a writer leaves it, its offset at
// the end: the object is the whole file, stays whole when the file is
// removed, and create-only and a wrong size hold as for Put.
func testPutFile(t *testing.T, st cloud.Store, _ string) {
	ctx := context.Background()
	body := bytes.Repeat([]byte("finished parquet bytes "), 50000)
	f := writeTemp(t, t.TempDir(), body)
	defer f.Close()
	if _, err := cloud.PutFile(ctx, st, "out/part-1.parquet", f, int64(len(body)), cloud.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(f.Name()); err != nil {
		t.Fatal(err)
	}
	if got := get(t, st, "out/part-1.parquet"); !bytes.Equal(got, body) {
		t.Fatalf("read back %d bytes, differing from the file's %d", len(got), len(body))
	}
	other := writeTemp(t, t.TempDir(), []byte("another file"))
	defer other.Close()
	_, err := cloud.PutFile(ctx, st, "out/part-1.parquet", other, 12, cloud.PutOptions{IfAbsent: true})
	checkErr(t, "a create-only PutFile over an existing key", err, cloud.ErrPreconditionFailed, st.URL("out/part-1.parquet"))
	if got := get(t, st, "out/part-1.parquet"); !bytes.Equal(got, body) {
		t.Fatal("a refused create-only PutFile changed the object")
	}
	if _, err := cloud.PutFile(ctx, st, "out/part-2.parquet", other, 5, cloud.PutOptions{}); err == nil {
		t.Error("PutFile of a 12-byte file stated as 5 bytes succeeded")
	}
	if got := listKeys(t, st, ""); !slices.Equal(got, []string{"out/part-1.parquet"}) {
		t.Errorf("List = %q, want the one object", got)
	}
}

// writeTemp writes body to a new file in dir and returns it open, its
// offset at the end.
func writeTemp(t testing.TB, dir string, body []byte) *os.File {
	t.Helper()
	f, err := os.CreateTemp(dir, "staged-*.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(body); err != nil {
		t.Fatal(err)
	}
	return f
}

func testShortBody(t *testing.T, st cloud.Store, _ string) {
	for _, opts := range []cloud.PutOptions{{}, {IfAbsent: true}} {
		_, err := st.Put(context.Background(), "short", onlyReader{strings.NewReader("abc")}, 10, opts)
		if err == nil {
			t.Errorf("Put %+v of 3 bytes stated as 10 succeeded", opts)
		}
	}
	if got := listKeys(t, st, ""); len(got) != 0 {
		t.Errorf("List = %q, want nothing", got)
	}
}

// TestListPages lists more keys than one page holds: every key comes back
// once, in order.
func TestListPages(t *testing.T) {
	for _, kind := range testenv.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			st := openStore(t, testenv.Location(t, kind), cloud.Options{ListPageSize: 7})
			var want []string
			var wg sync.WaitGroup
			for i := range 40 {
				k := fmt.Sprintf("p/%03d", i)
				want = append(want, k)
				wg.Go(func() { put(t, st, k, []byte(k), cloud.PutOptions{}) })
			}
			wg.Wait()
			put(t, st, "q", nil, cloud.PutOptions{})
			if got := listKeys(t, st, "p/"); !slices.Equal(got, want) {
				t.Errorf("List = %d keys %q..., want %d", len(got), got[:min(len(got), 3)], len(want))
			}
		})
	}
}
