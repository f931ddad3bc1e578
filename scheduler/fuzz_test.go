package scheduler

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pipeline file, whatever its bytes, parses or is refused with an
// error that names the file and matches ErrInvalid (or a read of the
// file failed); never a panic. Seeds: the shipped pipelines and the bad
// corpus.
func FuzzParsePipeline(f *testing.F) {
	for _, dir := range []string{"../testdata/pipelines", "../testdata/bad/pipelines"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("jobs:\n  a:\n    schedule: \"@every 1s\"\n    task: {table: t}\ntables:\n  t: {location: x}\n"))
	kinds := map[string]Kind{"task": funcKind{}}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("p.yaml", data, kinds, env(map[string]string{"SLUICE_LAKE": "lake"}))
		if err == nil {
			if p == nil {
				t.Fatalf("%q: no pipeline and no error", data)
			}
			return
		}
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "p.yaml") {
			t.Fatalf("%q: error %q does not name the file or match ErrInvalid", data, err)
		}
	})
}
