package cloud_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestOpenRefusesUnknownSchemes(t *testing.T) {
	for _, loc := range []string{"ftp://x/y", "gs://bucket/p", "s3:///no-bucket", "az://account", "abfss://nocontainer.dfs.core.windows.net/p", ""} {
		_, err := cloud.Open(context.Background(), loc)
		if !errors.Is(err, cloud.ErrUnsupportedURL) {
			t.Errorf("Open(%q): %v, want ErrUnsupportedURL", loc, err)
			continue
		}
		if !strings.Contains(err.Error(), loc) {
			t.Errorf("Open(%q): %q does not name the location", loc, err)
		}
	}
}

// TestMissingBucket: a bucket or container that does not exist is
// ErrNotFound (and ErrBucketNotFound), in one line naming it.
func TestMissingBucket(t *testing.T) {
	testenv.Setup(t)
	for kind, loc := range map[string]string{
		"s3":    "s3://no-such-bucket-x1/t",
		"azure": "az://" + testenv.AzuriteAccount + "/no-such-container-x1/t",
	} {
		t.Run(kind, func(t *testing.T) {
			st := openStore(t, loc, cloud.DefaultOptions())
			ctx := context.Background()
			name := strings.Split(strings.TrimPrefix(strings.TrimPrefix(loc, "s3://"), "az://"+testenv.AzuriteAccount+"/"), "/")[0]
			check := func(what string, err error) {
				t.Helper()
				checkErr(t, what, err, cloud.ErrBucketNotFound, st.URL(""))
				if err != nil && !strings.Contains(err.Error(), `"`+name+`" does not exist`) {
					t.Errorf("%s: %q does not say the bucket does not exist", what, err)
				}
			}
			_, err := st.Put(ctx, "_sluice/v/1.json", strings.NewReader("x"), 1, cloud.PutOptions{})
			check("Put", err)
			_, err = st.Put(ctx, "_sluice/v/1.json", strings.NewReader("x"), 1, cloud.PutOptions{IfAbsent: true})
			check("create-only Put", err)
			_, _, err = st.Get(ctx, "_sluice/v/1.json")
			check("Get", err)
			err = st.List(ctx, "", func(cloud.ObjectInfo) error { return nil })
			check("List", err)
			err = st.Delete(ctx, "_sluice/v/1.json")
			check("Delete", err)
			t.Logf("e.g. %v", err)
		})
	}
}

// TestWrongCredentials: refused credentials are ErrPermission, in one line
// naming the object, without the secret.
func TestWrongCredentials(t *testing.T) {
	ctx := context.Background()
	s3loc := testenv.Location(t, testenv.S3)
	azloc := testenv.Location(t, testenv.Azure)
	const wrongKey = "d3JvbmcgYWNjb3VudCBrZXkgZm9yIHNsdWljZSB0ZXN0cw=="
	cases := map[string]struct {
		loc, env, value, secret string
	}{
		"s3: an unknown access key id":                {s3loc, "AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG", os.Getenv("AWS_SECRET_ACCESS_KEY")},
		"azure: a connection string with a wrong key": {azloc, "AZURE_STORAGE_CONNECTION_STRING", testenv.AzuriteConnectionString(t, wrongKey), wrongKey},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			st := openStore(t, c.loc, cloud.DefaultOptions())
			_, err := st.Put(ctx, "_sluice/v/1.json", strings.NewReader("x"), 1, cloud.PutOptions{})
			checkErr(t, "Put", err, cloud.ErrPermission, st.URL("_sluice/v/1.json"))
			_, err = st.Put(ctx, "_sluice/v/1.json", strings.NewReader("x"), 1, cloud.PutOptions{IfAbsent: true})
			checkErr(t, "create-only Put", err, cloud.ErrPermission, st.URL("_sluice/v/1.json"))
			_, _, err = st.Get(ctx, "_sluice/v/1.json")
			checkErr(t, "Get", err, cloud.ErrPermission, st.URL("_sluice/v/1.json"))
			err = st.List(ctx, "", func(cloud.ObjectInfo) error { return nil })
			checkErr(t, "List", err, cloud.ErrPermission, st.URL(""))
			if err != nil && c.secret != "" && strings.Contains(err.Error(), c.secret) {
				t.Errorf("the error shows the secret: %q", err)
			}
			t.Logf("e.g. %v", err)
		})
	}
}
