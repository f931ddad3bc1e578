package ingest

import (
	"slices"
	"testing"
)

func TestCheckpointKeepsAHighWaterMarkOnlyForOrderedNames(t *testing.T) {
	listed := []string{"a", "b", "c", "d", "e"}
	cases := map[string]struct {
		start   checkpoint
		added   []string
		ordered bool
		mark    string
		files   []string
	}{
		"every name is kept without ordered names":                 {checkpoint{V: 1}, []string{"a", "b", "d"}, false, "", []string{"a", "b", "d"}},
		"the mark stops below the first name not taken (c failed)": {checkpoint{V: 1}, []string{"a", "b", "d"}, true, "b", []string{"d"}},
		"the mark advances over names taken by earlier runs":       {checkpoint{V: 1, Mark: "b", Files: []string{"d"}}, []string{"c"}, true, "d", []string{}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := c.start.with(c.added, listed, c.ordered)
			if got.Mark != c.mark || !slices.Equal(got.Files, c.files) {
				t.Fatalf("got mark %q files %v, want %q %v", got.Mark, got.Files, c.mark, c.files)
			}
			back, err := parseCheckpoint(got.raw())
			if err != nil || back.Mark != got.Mark || !slices.Equal(back.Files, got.Files) {
				t.Fatalf("round trip %s: %+v, %v", got.raw(), back, err)
			}
			for _, n := range append(c.added, c.start.Files...) {
				if !got.has(n) {
					t.Errorf("%s not recorded", n)
				}
			}
		})
	}
}
