//go:build unix

package cloud_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-data/sluice/cloud"
)

// What a local store creates is 0640 for files and 0750 for folders, or
// narrower as the umask says: a table is never readable by everyone. A
// file stored by PutFile's hard link, made 0666 less the umask, is
// narrowed the same. (Not parallel:
// the umask is the process's.)
func TestLocalModes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		umask         int
		file, folders fs.FileMode
	}{
		{0o022, 0o640, 0o750},
		{0o002, 0o640, 0o750},
		{0o027, 0o640, 0o750},
		{0o077, 0o600, 0o700},
	} {
		old := syscall.Umask(c.umask)
		base := t.TempDir()
		root := filepath.Join(base, "lake", "table")
		st := openStore(t, root, cloud.DefaultOptions())
		put(t, st, "date=2024-01-31/part-0.parquet", []byte("data"), cloud.PutOptions{})
		put(t, st, "_sluice/latest", []byte("1"), cloud.PutOptions{IfAbsent: true})
		src := filepath.Join(root, "date=2024-01-31", "staged")
		if err := os.WriteFile(src, []byte("linked"), 0o666); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cloud.PutFile(ctx, st, "date=2024-01-31/part-1.parquet", f, 6, cloud.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		os.Remove(src)
		syscall.Umask(old)
		err = filepath.WalkDir(filepath.Join(base, "lake"), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			want := c.file
			if d.IsDir() {
				want = c.folders
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("umask %03o: %s is %03o, want %03o", c.umask, strings.TrimPrefix(p, base), got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
