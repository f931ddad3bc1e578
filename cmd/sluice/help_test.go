package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// helpTexts renders the --help of every command of the tree, hidden
// ones aside, keyed by command path.
func helpTexts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		var b bytes.Buffer
		c.SetOut(&b)
		c.SetErr(&b)
		if err := c.Help(); err != nil {
			t.Fatalf("%s --help: %v", c.CommandPath(), err)
		}
		out[c.CommandPath()] = b.String()
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newApp().rootCommand())
	if len(out) < 15 {
		t.Fatalf("walked %d commands, want every command of sluice", len(out))
	}
	return out
}

// serve runs every job with the jobs after it: --only, which run and
// backfill take to run a job alone, means nothing there and must not be
// offered.
func TestServeHelpOffersNoOnly(t *testing.T) {
	r := mustSluice(t, "serve", "--help")
	if strings.Contains(r.stdout, "--only") {
		t.Errorf("serve --help offers --only:\n%s", r.stdout)
	}
	if r := sluice(t, nil, "serve", "--config", "x.yaml", "--only"); r.code != 2 || !strings.Contains(r.stderr, "--only") {
		t.Errorf("serve --only: exit %d, stderr %q; want a usage error naming --only", r.code, r.stderr)
	}
	for _, c := range []string{"run", "backfill"} {
		if help := mustSluice(t, c, "--help").stdout; !strings.Contains(help, "--only ") {
			t.Errorf("%s --help lost --only:\n%s", c, help)
		}
	}
}

// A size is spelled as the flags take it and as the examples show it,
// 256MiB, in every --help and in the README: no space (a user copying
// "--memory 256 MiB" passes two arguments), binary units, the unit's case
// as written here.
func TestHelpSpellsSizesOneWay(t *testing.T) {
	size := regexp.MustCompile(`\b\d+(\.\d+)?\s*[KkMmGgTtPp]i?[Bb]\b`)
	good := regexp.MustCompile(`^\d+(\.\d+)?[KMGTP]iB$`)
	texts := helpTexts(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	texts["README.md"] = string(readme)
	seen := 0
	for path, text := range texts {
		for _, m := range size.FindAllString(text, -1) {
			seen++
			if !good.MatchString(m) {
				t.Errorf("%s spells a size %q; want it as 256MiB", path, m)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no size found in any --help: the pattern is wrong")
	}
}
