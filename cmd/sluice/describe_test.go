package main

import (
	"fmt"
	"strings"
	"testing"
)

// checkDescribe checks that describe reports lookTable's totals, schema
// (nested types as --schema spells them), partitions and quarantine, with
// --json, and as text when text is set.
func checkDescribe(t *testing.T, loc string, text bool) {
	t.Helper()
	d := summaryOf(t, mustSluice(t, "describe", loc, "--json"))
	if d["command"] != "describe" || d["rows"] != 3.0 || d["files"] != 2.0 || d["version"] != 2.0 {
		t.Fatalf("describe --json: %v", d)
	}
	if parts := fmt.Sprint(d["partitions"]); !strings.Contains(parts, "partition:date=2024-01-01") || !strings.Contains(parts, "partition:date=2024-01-02") {
		t.Errorf("partitions %s", parts)
	}
	if schema := fmt.Sprint(d["schema"]); !strings.Contains(schema, "type:struct<a:int64,b:string?>") || !strings.Contains(schema, "type:list<string?>") {
		t.Errorf("schema %s", schema)
	}
	q, _ := d["quarantine"].(map[string]any)
	reasons, _ := q["reasons"].([]any)
	if q["rows"] != 1.0 || len(reasons) != 1 || reasons[0].(map[string]any)["count"] != 1.0 {
		t.Errorf("quarantine %v", d["quarantine"])
	}
	if !text {
		return
	}
	out := mustSluice(t, "describe", loc).stdout
	for _, want := range []string{"Schema", "small-file debt", "date=2024-01-02", "File sizes", "Versions", "Quarantine", "Last publish"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe does not say %q:\n%s", want, out)
		}
	}
}
