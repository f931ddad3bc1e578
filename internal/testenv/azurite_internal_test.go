package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// A checkout without tools/node_modules fails with the message that says
// how to fix it (the suites fail on it rather than skip).
func TestAzuriteMissingSaysHowToInstall(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "pkg", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	_, err := launchAzurite()
	if err == nil || err.Error() != `azurite not installed: run "make tools" (npm install in tools/)` {
		t.Fatalf("launchAzurite in a checkout without tools: %v", err)
	}
}
