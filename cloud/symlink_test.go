package cloud_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
)

// linked is a local store whose root holds symbolic links: out (a folder
// link to a folder outside the root, holding x.parquet), up (the same by a
// relative path that climbs out), file.parquet (an absolute link to a file
// outside), and alias (a relative link to the folder real inside the root,
// holding f.parquet).
type linked struct {
	st            cloud.Store
	root, outside string
}

func newLinked(t *testing.T) linked {
	t.Helper()
	base := t.TempDir()
	root, outside := filepath.Join(base, "table"), filepath.Join(base, "elsewhere")
	for _, d := range []string{filepath.Join(root, "real"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(outside, "x.parquet"), filepath.Join(root, "real", "f.parquet")} {
		if err := os.WriteFile(f, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"out":          outside,
		"up":           filepath.Join("..", "elsewhere"),
		"file.parquet": filepath.Join(outside, "x.parquet"),
		"alias":        "real",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return linked{openStore(t, root, cloud.DefaultOptions()), root, outside}
}

// outsideNames lists the folder outside the root.
func (l linked) outsideNames(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(l.outside)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// refused asserts that err is ErrOutsideRoot, in one line naming the
// object's path, the link and that the path leaves the root.
func refused(t *testing.T, l linked, key string, err error) {
	t.Helper()
	if !errors.Is(err, cloud.ErrOutsideRoot) {
		t.Fatalf("%s: err %v, want ErrOutsideRoot", key, err)
	}
	msg := err.Error()
	link := filepath.Join(l.root, strings.SplitN(key, "/", 2)[0])
	for _, want := range []string{filepath.Join(l.root, filepath.FromSlash(key)), link + " links to", "leaves the root"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Fatalf("%s: error %q: want one line holding %q", key, msg, want)
		}
	}
}

// A link that leaves the root is never read, written, listed or deleted
// through; a relative link that stays inside is followed by point
// operations and not listed twice.
var symlinkCases = map[string]func(t *testing.T, l linked){
	"a put through a folder link out of the root is refused, nothing lands outside": func(t *testing.T, l linked) {
		ctx := context.Background()
		for _, key := range []string{"out/date=2024-06-01/part-1.parquet", "out/part-1.parquet", "up/part-1.parquet"} {
			for _, opts := range []cloud.PutOptions{{}, {IfAbsent: true}} {
				_, err := l.st.Put(ctx, key, bytes.NewReader([]byte("new")), 3, opts)
				refused(t, l, key, err)
			}
			f := writeTemp(t, t.TempDir(), []byte("new"))
			_, err := cloud.PutFile(ctx, l.st, key, f, 3, cloud.PutOptions{})
			f.Close()
			refused(t, l, key, err)
		}
		if got := l.outsideNames(t); !slices.Equal(got, []string{"x.parquet"}) {
			t.Fatalf("outside the root: %q, want x.parquet alone", got)
		}
	},
	"a compare-and-swap over a file link out of the root is refused": func(t *testing.T, l linked) {
		_, err := l.st.Put(context.Background(), "file.parquet", bytes.NewReader([]byte("new")), 3, cloud.PutOptions{IfMatch: "x"})
		refused(t, l, "file.parquet", err)
	},
	"a get, range get or stat through a link out of the root is refused": func(t *testing.T, l linked) {
		ctx := context.Background()
		for _, key := range []string{"out/x.parquet", "up/x.parquet", "file.parquet"} {
			_, _, err := l.st.Get(ctx, key)
			refused(t, l, key, err)
			_, err = l.st.GetRange(ctx, key, 1, 2)
			refused(t, l, key, err)
			_, err = l.st.Stat(ctx, key)
			refused(t, l, key, err)
		}
	},
	"a delete through a link out of the root is refused and the file stays": func(t *testing.T, l linked) {
		for _, key := range []string{"out/x.parquet", "up/x.parquet", "file.parquet"} {
			refused(t, l, key, l.st.Delete(context.Background(), key))
		}
		if got := l.outsideNames(t); !slices.Equal(got, []string{"x.parquet"}) {
			t.Fatalf("outside the root: %q, want x.parquet still there", got)
		}
		if _, err := os.Lstat(filepath.Join(l.root, "file.parquet")); err != nil {
			t.Fatalf("the link itself: %v", err)
		}
	},
	"a listing that meets a link out of the root fails, naming it": func(t *testing.T, l linked) {
		for _, prefix := range []string{"", "out/", "up/x", "file"} {
			err := l.st.List(context.Background(), prefix, func(cloud.ObjectInfo) error { return nil })
			if !errors.Is(err, cloud.ErrOutsideRoot) || !strings.Contains(err.Error(), " links to ") {
				t.Fatalf("list %q: %v, want ErrOutsideRoot naming the link", prefix, err)
			}
		}
	},
	"a relative link inside the root is followed by reads and writes, listed once": func(t *testing.T, l linked) {
		if got := get(t, l.st, "alias/f.parquet"); string(got) != "data" {
			t.Fatalf("get through alias: %q", got)
		}
		put(t, l.st, "alias/g.parquet", []byte("more"), cloud.PutOptions{IfAbsent: true})
		if b, err := os.ReadFile(filepath.Join(l.root, "real", "g.parquet")); err != nil || string(b) != "more" {
			t.Fatalf("put through alias landed where? %q, %v", b, err)
		}
		for _, prefix := range []string{"real/", "r"} { // "r": no link's name starts so
			if got := listKeys(t, l.st, prefix); !slices.Equal(got, []string{"real/f.parquet", "real/g.parquet"}) {
				t.Fatalf("list %q: %q", prefix, got)
			}
		}
		if err := l.st.Delete(context.Background(), "alias/g.parquet"); err != nil {
			t.Fatal(err)
		}
		if got := listKeys(t, l.st, "real/"); !slices.Equal(got, []string{"real/f.parquet"}) {
			t.Fatalf("after delete through alias: %q", got)
		}
	},
}

func TestLocalSymlinks(t *testing.T) {
	for name, fn := range symlinkCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, newLinked(t))
		})
	}
}
