package cloud_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sluice-data/sluice/cloud"
)

// A message reaches the user as one line: folded, control characters
// escaped, and cut only between characters.
func TestOneLineFoldsEscapesAndCutsBetweenCharacters(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		want  string
	}{
		{"read a:\n\tconnection reset\r\n", 0, "read a: connection reset"},
		{"column \"a\x1b[2Jb\"", 0, `column "a\x1b[2Jb"`},
		{strings.Repeat("x", 10), 10, strings.Repeat("x", 10)},
		{strings.Repeat("x", 11), 10, strings.Repeat("x", 10) + "…"},
		{"xxxxxxxxxé", 10, "xxxxxxxxx…"},
	}
	for _, c := range cases {
		got := cloud.OneLine(c.in, c.limit)
		if got != c.want || !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r") {
			t.Errorf("OneLine(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
}
