package cloud_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

// climbingNames are object names, relative to a table's root, that
// another writer of the bucket or container can create (no store of ours
// would): a listing hands them on, and every point operation refuses them.
var climbingNames = []string{"x/../../../y.parquet", `a\..\..\z.parquet`, "b//c.parquet"}

// A key that a listing of S3 or Azure hands on, written there by another
// tool, and that would climb out of the root or name another object
// elsewhere, is refused by Get, Stat and Delete with ErrInvalidKey: a
// listing never turns into a read or a delete outside the root, and the
// object stays.
func TestListedKeysThatClimbAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{testenv.S3, testenv.Azure} {
		t.Run(kind, func(t *testing.T) {
			loc := testenv.Location(t, kind)
			l, err := cloud.ParseLocation(loc)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range climbingNames {
				rawPut(t, kind, l, l.Prefix+"/"+name)
			}
			st := openStore(t, loc, cloud.DefaultOptions())
			keys := listKeys(t, st, "")
			for _, name := range climbingNames {
				if kind == testenv.Azure {
					// Azure stores a backslash in a name as '/': one
					// reason no store of ours takes a key holding one.
					name = strings.ReplaceAll(name, `\`, "/")
				}
				if !slices.Contains(keys, name) {
					t.Errorf("the listing %q lacks %q", keys, name)
					continue
				}
				_, _, err := st.Get(ctx, name)
				if !errors.Is(err, cloud.ErrInvalidKey) {
					t.Errorf("Get(%q): %v, want ErrInvalidKey", name, err)
				}
				if _, err := st.Stat(ctx, name); !errors.Is(err, cloud.ErrInvalidKey) {
					t.Errorf("Stat(%q): %v, want ErrInvalidKey", name, err)
				}
				if err := st.Delete(ctx, name); !errors.Is(err, cloud.ErrInvalidKey) {
					t.Errorf("Delete(%q): %v, want ErrInvalidKey", name, err)
				}
			}
			if again := listKeys(t, st, ""); !slices.Equal(again, keys) {
				t.Errorf("listed %q after, %q before", again, keys)
			}
		})
	}
}

// rawPut writes an object of name in l's bucket or container through the
// SDK itself, past the store's key checks, as another tool would.
func rawPut(t *testing.T, kind string, l cloud.Location, name string) {
	t.Helper()
	ctx := context.Background()
	switch kind {
	case testenv.S3:
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(l.Bucket), Key: aws.String(name), Body: strings.NewReader("x")})
		if err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
	case testenv.Azure:
		c, err := azblob.NewClientFromConnectionString(testenv.AzuriteConnectionString(t, testenv.AzuriteAccountKey), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.UploadBuffer(ctx, l.Bucket, name, []byte("x"), nil); err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
	}
}
