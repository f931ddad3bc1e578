package pqio

import (
	"errors"
	"strings"
	"testing"
)

// --- schema rules -------------------------------------------------------------

func TestCheckCompatible(t *testing.T) {
	for name, tc := range map[string]struct {
		table, file string
		refused     string // a substring of the error, "" if accepted
	}{
		"the same schema":                        {"a:int64,b:string?", "a:int64,b:string?", ""},
		"int32 widens to int64":                  {"a:int64", "a:int32", ""},
		"int32 widens to float64":                {"a:float64", "a:int32", ""},
		"int64 does not fit float64 exactly":     {"a:float64", "a:int64", `column "a": the file has int64, the table float64`},
		"int64 does not narrow to int32":         {"a:int32", "a:int64", `column "a"`},
		"a wider decimal":                        {"a:decimal(20,5)", "a:decimal(10,2)", ""},
		"a decimal losing scale":                 {"a:decimal(20,1)", "a:decimal(10,2)", `column "a": the file has decimal(10,2), the table decimal(20,1)`},
		"a decimal losing integer digits":        {"a:decimal(10,4)", "a:decimal(10,2)", `column "a"`},
		"int32 into a wide decimal":              {"a:decimal(11,1)", "a:int32", ""},
		"int32 into a narrow decimal":            {"a:decimal(10,1)", "a:int32", `column "a"`},
		"int64 into decimal(19,0)":               {"a:decimal(19,0)", "a:int64", ""},
		"int64 into decimal(20,2)":               {"a:decimal(20,2)", "a:int64", `column "a"`},
		"uuid and string either way":             {"a:uuid,b:string", "a:string,b:uuid", ""},
		"a date is not a timestamp":              {"d:timestamp", "d:date", `column "d": the file has date, the table timestamp (a date is never read as a timestamp`},
		"a timestamp is not a date":              {"d:date", "d:timestamp", `column "d": the file has timestamp, the table date`},
		"string is not int":                      {"a:int64", "a:string", `column "a": the file has string, the table int64`},
		"a file column the table lacks":          {"a:int64", "a:int64,x:bool", `column "x" (bool) is not in the table`},
		"a required table column the file lacks": {"a:int64,r:int32", "a:int64", `column "r" (int32, not nullable) is missing from the file`},
		"a nullable table column the file lacks": {"a:int64,n:int32?", "a:int64", ""},
		"a nullable file column, required table": {"a:int64", "a:int64?", ""},
	} {
		t.Run(name, func(t *testing.T) {
			err := CheckCompatible(pqSchema(t, tc.table), pqSchema(t, tc.file), "f.parquet")
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Errorf("accepted, want refused with %q", tc.refused)
			case tc.refused != "" && (!errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.refused) || !strings.HasPrefix(err.Error(), "f.parquet: ")):
				t.Errorf("error %v\nwant ErrIncompatibleSchema, naming f.parquet, containing %q", err, tc.refused)
			}
		})
	}
}

func TestMergeSchemas(t *testing.T) {
	for name, tc := range map[string]struct {
		a, b, want string
		refused    string
	}{
		"the same":                      {"a:int64,b:string", "a:int64,b:string", "a:int64,b:string", ""},
		"int32 and int64":               {"a:int32", "a:int64", "a:int64", ""},
		"int64 and int32":               {"a:int64", "a:int32", "a:int64", ""},
		"int32 and float64":             {"a:int32", "a:float64", "a:float64", ""},
		"decimals of different scale":   {"a:decimal(10,2)", "a:decimal(8,4)", "a:decimal(12,4)", ""},
		"int64 and a decimal":           {"a:int64", "a:decimal(10,2)", "a:decimal(21,2)", ""},
		"uuid and string":               {"a:uuid", "a:string", "a:string", ""},
		"columns missing become null":   {"a:int64,b:int32", "c:bool,a:int64", "a:int64,b:int32?,c:bool?", ""},
		"nullable on either side":       {"a:int64", "a:int64?", "a:int64?", ""},
		"date and timestamp":            {"d:date", "d:timestamp", "", `column "d": date and timestamp have no common type`},
		"int64 and float64":             {"a:int64", "a:float64", "", `column "a": int64 and float64`},
		"string and int":                {"a:string", "a:int32", "", `column "a"`},
		"decimals too wide for 38":      {"a:decimal(38,0)", "a:decimal(38,10)", "", `column "a"`},
		"several problems, one message": {"a:string,b:date", "a:int32,b:timestamp", "", `column "a": string and int32 have no common type; column "b"`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := MergeSchemas(pqSchema(t, tc.a), pqSchema(t, tc.b))
			if tc.refused != "" {
				if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("got %v (%s), want ErrIncompatibleSchema containing %q", err, got, tc.refused)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Errorf("got %s, %v; want %s", got, err, tc.want)
			}
			// Both sides read as the merged schema.
			for _, s := range []string{tc.a, tc.b} {
				if err := CheckCompatible(got, pqSchema(t, s), "x"); err != nil {
					t.Errorf("%s does not read as the merged %s: %v", s, got, err)
				}
			}
		})
	}
}
