package pqio

import (
	"strings"
	"testing"
)

// A column or struct field name that is not UTF-8 text, or holds a
// control character, is refused naming it: a manifest is JSON, which
// would store the name as U+FFFD and so rename the column silently.
func TestSchemaRefusesNamesThatAreNotText(t *testing.T) {
	for s, want := range map[string]string{
		"\x80:string":                "not UTF-8",
		"a:int64,\xff:string":        "not UTF-8",
		"s:struct<\xc3:int64>":       "not UTF-8",
		"a\nb:int64":                 "control character",
		"s:struct<a\x00b:int64>":     "control character",
		"l:list<struct<x\ty:int64>>": "control character",
	} {
		_, err := ParseSchema(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSchema(%q) = %v, want an error saying %q", s, err, want)
		}
	}
	for _, s := range []string{"é:string", "名前:int64,s:struct<ü:int64>", "a b:int64"} {
		if _, err := ParseSchema(s); err != nil {
			t.Errorf("ParseSchema(%q): %v", s, err)
		}
	}
}
