package catalog

import "testing"

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
