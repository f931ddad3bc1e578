package testenv_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestLocationsAreFreshAndDistinct(t *testing.T) {
	a, b := testenv.Locations(t), testenv.Locations(t)
	for _, kind := range testenv.Kinds {
		if a[kind] == "" || a[kind] == b[kind] {
			t.Errorf("%s: %q then %q", kind, a[kind], b[kind])
		}
	}
	if !strings.HasPrefix(a[testenv.S3], "s3://") || !strings.HasPrefix(a[testenv.Azure], "az://"+testenv.AzuriteAccount+"/") {
		t.Errorf("Locations = %v", a)
	}
}

func TestEnvReachesTheServers(t *testing.T) {
	env := testenv.Env()
	want := []string{"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AZURE_STORAGE_CONNECTION_STRING"}
	for _, k := range want {
		found := false
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				found = true
				if os.Getenv(k) != v {
					t.Errorf("process env %s = %q, Env says %q", k, os.Getenv(k), v)
				}
			}
		}
		if !found {
			t.Errorf("Env lacks %s: %q", k, env)
		}
	}
}

func TestCheckAccessKeyRefusesOtherKeys(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := httptest.NewServer(testenv.CheckAccessKey("GOOD", ok))
	defer srv.Close()
	for akid, wantStatus := range map[string]int{"GOOD": 200, "BAD": 403, "": 403} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/bkt/key", nil)
		if akid != "" {
			req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+akid+"/20240131/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != wantStatus {
			t.Errorf("%q: HTTP %d, want %d", akid, resp.StatusCode, wantStatus)
		}
		if wantStatus == 403 && !strings.Contains(string(body), "<Code>InvalidAccessKeyId</Code>") {
			t.Errorf("%q: body %s", akid, body)
		}
	}
}

// The tests, and the processes they start, write their temporary files in
// a folder of their own that Run removes at the end.
func TestTemporaryFolderIsTheTests(t *testing.T) {
	dir := os.TempDir()
	if !strings.HasPrefix(filepath.Base(dir), "sluice-tests-") {
		t.Fatalf("os.TempDir() = %s, want a folder of the tests' own", dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("%s: %v", dir, err)
	}
}
