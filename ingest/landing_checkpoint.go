package ingest

import (
	"encoding/json"
	"fmt"
	"slices"
)

// checkpoint is what a table's manifest records of a landing source,
// under the key "landing:<source URL>", as compact JSON:
//
//	{"v":1,"mark":"2024/01/31/part-0042.jsonl","files":["2024/01/31/part-0044.jsonl"]}
//
// A landing file (named by its key relative to the source prefix) was
// taken if it is in files, or if mark is set and its name sorts at or
// below mark. files is sorted. mark is only ever set under
// Options.OrderedNames: it advances to the highest name such that every
// file listed at or below it was taken, and the names it covers leave
// files, so the checkpoint stays small however many files have landed.
// Without OrderedNames every taken name stays listed: exact, at about the
// length of the names per file in each manifest version.
//
// The quarantine table keeps the same shape under the key
// "quarantined:<table location> <source URL>": the files whose quarantined
// records are committed there (see Run for why).
type checkpoint struct {
	V     int      `json:"v"`
	Mark  string   `json:"mark,omitempty"`
	Files []string `json:"files"`
}

func parseCheckpoint(raw json.RawMessage) (checkpoint, error) {
	var c checkpoint
	if len(raw) == 0 || string(raw) == "null" {
		return checkpoint{V: 1}, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return checkpoint{}, fmt.Errorf("checkpoint %s: %w", raw, err)
	}
	if c.V != 1 {
		return checkpoint{}, fmt.Errorf("checkpoint format %d is newer than this sluice (1)", c.V)
	}
	slices.Sort(c.Files)
	return c, nil
}

func (c checkpoint) has(name string) bool {
	if c.Mark != "" && name <= c.Mark {
		return true
	}
	_, ok := slices.BinarySearch(c.Files, name)
	return ok
}

// with returns c plus the names added. listed is every name this run saw
// (sorted); with ordered set, the mark advances over the run of taken
// names at the start of listed.
func (c checkpoint) with(added []string, listed []string, ordered bool) checkpoint {
	out := checkpoint{V: 1, Mark: c.Mark}
	out.Files = append(slices.Clone(c.Files), added...)
	slices.Sort(out.Files)
	out.Files = slices.Compact(out.Files)
	if ordered {
		taken := func(n string) bool {
			_, ok := slices.BinarySearch(out.Files, n)
			return ok || (out.Mark != "" && n <= out.Mark)
		}
		for _, n := range listed {
			if !taken(n) {
				break
			}
			if n > out.Mark {
				out.Mark = n
			}
		}
		out.Files = slices.DeleteFunc(out.Files, func(n string) bool { return n <= out.Mark })
	}
	if out.Files == nil {
		out.Files = []string{}
	}
	return out
}

// without returns c minus the names in drop (used to prune the quarantine
// checkpoint of files the table has since recorded).
func (c checkpoint) without(drop func(string) bool) checkpoint {
	out := checkpoint{V: 1, Mark: c.Mark, Files: slices.DeleteFunc(slices.Clone(c.Files), drop)}
	if out.Files == nil {
		out.Files = []string{}
	}
	return out
}

func (c checkpoint) raw() json.RawMessage {
	b, _ := json.Marshal(c)
	return b
}
