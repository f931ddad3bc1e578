package cloud_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// parentOf returns the location one folder above a test location: the
// folder, or the bucket's or container's prefix, the table's root lives
// in, where a key that escaped the root would land.
func parentOf(t *testing.T, kind, loc string) string {
	t.Helper()
	if kind == testenv.Local {
		return filepath.Dir(loc)
	}
	i := strings.LastIndex(loc, "/")
	if i < 0 {
		t.Fatalf("no parent of %s", loc)
	}
	return loc[:i]
}

// escapingKeys are keys, as data or a listing could give them, that would
// name an object outside the store's root, or a different object on
// another store or system, if taken as they are. Every store refuses them.
var escapingKeys = map[string]string{
	"a parent segment":                  "../x",
	"a parent segment deeper down":      "a/../../x",
	"an absolute path":                  "/etc/passwd",
	"a NUL":                             "a\x00/../../x",
	"a backslash parent":                `..\x`,
	"backslashes climbing":              `a\..\..\x`,
	"a Windows drive":                   `C:\x`,
	"a segment longer than 255 bytes":   "a/" + strings.Repeat("n", 256),
	"a key longer than 1024 bytes":      strings.Repeat("abcdefg/", 128) + "x",
	"a parent segment in a partition":   "date=2024-01-31/../../../x",
	"an empty segment then a parent":    "a//../x",
	"a reserved temp name in a folder:": "a/.tmp-0123456789abcdef",
}

// literalKeys look like escapes once unescaped, but a store never
// unescapes a key: each names the object of exactly that name, inside the
// root.
var literalKeys = []string{
	"%2e%2e/%2e%2e/x",
	"%2E%2E%2F%2E%2E%2Fy",
	"date=%2e%2e%2F%2e%2e/part-0.parquet",
	"..%2Fz",
	".../w",
	"..x/v",
	"a%00b/u",
	"a%5C..%5C..%5Ct",
	"a/" + strings.Repeat("n", 255),
}

// Keys that would leave the store's root are refused with ErrInvalidKey
// by every operation on every store, and nothing lands outside the root;
// keys that only look like escapes once unescaped are stored under
// exactly their name, inside it (issue 19).
func TestKeysNeverLeaveTheRoot(t *testing.T) {
	ctx := context.Background()
	for _, kind := range testenv.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			loc := testenv.Location(t, kind)
			st := openStore(t, loc, cloud.DefaultOptions())
			parent := openStore(t, parentOf(t, kind, loc), cloud.DefaultOptions())
			put(t, st, "keep.json", []byte("k"), cloud.PutOptions{})
			for name, key := range escapingKeys {
				check := func(op string, err error) {
					t.Helper()
					if !errors.Is(err, cloud.ErrInvalidKey) {
						t.Errorf("%s: %s(%q): %v, want ErrInvalidKey", name, op, key, err)
					}
				}
				_, err := st.Put(ctx, key, strings.NewReader("x"), 1, cloud.PutOptions{})
				check("Put", err)
				_, err = st.Put(ctx, key, strings.NewReader("x"), 1, cloud.PutOptions{IfAbsent: true})
				check("create-only Put", err)
				_, _, err = st.Get(ctx, key)
				check("Get", err)
				_, err = st.GetRange(ctx, key, 0, 1)
				check("GetRange", err)
				_, err = st.Stat(ctx, key)
				check("Stat", err)
				check("Delete", st.Delete(ctx, key))
			}
			for _, key := range literalKeys {
				put(t, st, key, []byte(key), cloud.PutOptions{})
				if got := string(get(t, st, key)); got != key {
					t.Errorf("Get(%q) = %q", key, got)
				}
			}
			want := append([]string{"keep.json"}, literalKeys...)
			slices.Sort(want)
			if got := listKeys(t, st, ""); !slices.Equal(got, want) {
				t.Errorf("the root lists %q, want %q", got, want)
			}
			// Seen from one folder up, every object is under the root.
			base := filepath.Base(loc)
			for _, k := range listKeys(t, parent, "") {
				if !strings.HasPrefix(k, base+"/") {
					t.Errorf("%q landed outside the root %q", k, base)
				}
			}
		})
	}
}

// A file in a local folder whose name a store would refuse as a key (a
// backslash, as another system or a user can leave one) is listed under
// its name, and every point operation on that key is refused, so nothing
// reads or deletes it as some other path.
func TestLocalListedKeysWithBackslashesAreRefused(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	name := `..\..\x.json`
	if err := os.WriteFile(filepath.Join(root, name), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := openStore(t, root, cloud.DefaultOptions())
	keys := listKeys(t, st, "")
	if !slices.Equal(keys, []string{name}) {
		t.Fatalf("listed %q, want %q", keys, name)
	}
	_, _, err := st.Get(ctx, keys[0])
	if !errors.Is(err, cloud.ErrInvalidKey) {
		t.Errorf("Get(%q): %v, want ErrInvalidKey", keys[0], err)
	}
	if err := st.Delete(ctx, keys[0]); !errors.Is(err, cloud.ErrInvalidKey) {
		t.Errorf("Delete(%q): %v, want ErrInvalidKey", keys[0], err)
	}
	if _, err := os.Stat(filepath.Join(root, name)); err != nil {
		t.Errorf("the file is gone: %v", err)
	}
}

// A location whose prefix climbs, or holds NUL or a backslash, is refused:
// an HTTP client or the service could resolve it out of the bucket or
// container named.
func TestLocationsWithClimbingPrefixesAreRefused(t *testing.T) {
	for _, loc := range []string{
		"s3://b/../other", "s3://b/t/../../x", "s3://b/./t", `s3://b/t\..\x`, "s3://b/t\x00",
		"az://acct/cont/../x", "abfss://cont@acct.dfs.core.windows.net/t/..", "wasbs://cont@acct.blob.core.windows.net/./t",
	} {
		_, err := cloud.ParseLocation(loc)
		if !errors.Is(err, cloud.ErrUnsupportedURL) {
			t.Errorf("ParseLocation(%q): %v, want ErrUnsupportedURL", loc, err)
		}
	}
	for _, loc := range []string{"s3://b/t/%2e%2e", "s3://b/...", "az://acct/cont/..x"} {
		if _, err := cloud.ParseLocation(loc); err != nil {
			t.Errorf("ParseLocation(%q): %v", loc, err)
		}
	}
}
