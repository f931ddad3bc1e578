package catalog

import (
	"strings"
	"testing"
)

func TestManifestTargetFileSize(t *testing.T) {
	for prop, want := range map[string]int64{"": DefaultTargetFileSize, "1048576": 1 << 20, "0": DefaultTargetFileSize,
		"-5": DefaultTargetFileSize, "256MiB": DefaultTargetFileSize} {
		m := &Manifest{Properties: map[string]string{}}
		if prop != "" {
			m.Properties[PropTargetFileSize] = prop
		}
		if got := m.TargetFileSize(); got != want {
			t.Errorf("target_file_size %q: %d, want %d", prop, got, want)
		}
	}
}

// A manifest whose schema has a column, or whose partition spec has a
// field, without a type (or a name) is corrupt, said so naming the
// manifest and the column or field, rather than read as a table with a
// column of no type (found by FuzzDecodeManifest: its corpus keeps the
// inputs as column-without-type and partition-field-without-type).
func TestDecodeManifestRefusesAColumnWithoutAType(t *testing.T) {
	for _, b := range []string{`{"sChemA":{"Columns":[{}]}}`, `{"schema":{"columns":[{"name":"a","type":"int64"},{"name":"b"}]}}`, `{"schema":{"columns":[{"type":"int64"}]}}`,
		`{"pArtition_speC":{"fields":[{}]}}`, `{"partition_spec":{"fields":[{"name":"date","transform":"month","type":"date"}]}}`} {
		_, err := decodeManifest("_sluice/versions/7.json", []byte(b))
		if err == nil || !strings.Contains(err.Error(), "_sluice/versions/7.json: corrupt manifest: ") || !strings.Contains(err.Error(), " column ") && !strings.Contains(err.Error(), " partition field ") {
			t.Errorf("%s: %v, want a corrupt manifest naming the column or field", b, err)
		}
	}
}
