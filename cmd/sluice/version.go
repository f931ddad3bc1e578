package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what the binary says it was built from: the main
// module's version ("(devel)" from a checkout without a tag) and the VCS
// commit, with whether the tree had uncommitted changes.
type buildVersion struct {
	Version  string
	Commit   string // empty when the build recorded none
	Modified bool
}

func readBuildVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildVersion{Version: "unknown"}
	}
	v := buildVersion{Version: bi.Main.Version}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line --version prints:
// "sluice VERSION commit REVISION", " (modified)" after a build from a
// tree with uncommitted changes, "commit unknown" when none was recorded.
func (v buildVersion) String() string {
	commit := v.Commit
	if commit == "" {
		commit = "unknown"
	}
	s := fmt.Sprintf("sluice %s commit %s", v.Version, commit)
	if v.Modified {
		s += " (modified)"
	}
	return s
}

// printVersion prints the build's version, or with --json sets it as the
// summary.
func (a *app) printVersion() error {
	v := readBuildVersion()
	if a.jsonOut {
		return a.summary(map[string]any{"command": "version", "version": v.Version, "commit": v.Commit, "modified": v.Modified})
	}
	_, err := fmt.Fprintln(a.stdout, v)
	return err
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and commit sluice was built from (same as sluice --version)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			return a.printVersion()
		},
	}
}
