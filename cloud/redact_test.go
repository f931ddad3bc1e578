package cloud_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/cloud"
	"github.com/sluice-data/sluice/internal/testenv"
)

func TestRedact(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"a transport error keeps the host and path of a SAS URL but none of its values": {
			`get: Get "http://127.0.0.1:1/devstoreaccount1/c/t%2F_sluice%2Flatest?se=2099-01-01T00%3A00%3A00Z&sig=SECRETSIG&sp=rwdlac&sv=2022-11-02": dial tcp 127.0.0.1:1: connect: connection refused`,
			`get: Get "http://127.0.0.1:1/devstoreaccount1/c/t%2F_sluice%2Flatest?se=REDACTED&sig=REDACTED&sp=REDACTED&sv=REDACTED": dial tcp 127.0.0.1:1: connect: connection refused`,
		},
		"an S3 presigned URL loses its signature, credential and token": {
			"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20240101&X-Amz-Security-Token=TOK&X-Amz-Signature=abc123",
			"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=REDACTED&X-Amz-Credential=REDACTED&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED",
		},
		"a URL followed by a colon keeps the colon": {
			"az://a/c/t?sig=S: get: not found",
			"az://a/c/t?sig=REDACTED: get: not found",
		},
		"a query part without '=' may be a token": {
			"https://h/p?TOKEN&a=1#frag",
			"https://h/p?REDACTED&a=REDACTED#frag",
		},
		"a kafka URL keeps its user and brokers, not its password": {
			"ingest kafka://user:PASS@b1:9092,b2:9092/events: dial",
			"ingest kafka://user:REDACTED@b1:9092,b2:9092/events: dial",
		},
		"a postgres URL loses its password and its query values": {
			"publish postgres://loader:PASS@db.example.com:5432/lake?sslmode=require&password=PASS2",
			"publish postgres://loader:REDACTED@db.example.com:5432/lake?sslmode=REDACTED&password=REDACTED",
		},
		"a redshift URL with an '@' in the password": {
			"redshift://u:p@ss@cluster:5439/db",
			"redshift://u:REDACTED@cluster:5439/db",
		},
		"a user name alone is kept (abfss names its container so)": {
			"abfss://cont@acct.dfs.core.windows.net/lake/t",
			"abfss://cont@acct.dfs.core.windows.net/lake/t",
		},
		"a connection string loses its account key and SAS": {
			"DefaultEndpointsProtocol=http;AccountName=dev;AccountKey=KEY/+==;BlobEndpoint=http://127.0.0.1:1/dev;SharedAccessSignature=sv=1&ss=b&sig=SIG%3D",
			"DefaultEndpointsProtocol=http;AccountName=dev;AccountKey=REDACTED;BlobEndpoint=http://127.0.0.1:1/dev;SharedAccessSignature=REDACTED",
		},
		"a query string standing alone": {
			"PUT /c/blob?comp=block&sig=SIG returned 403",
			"PUT /c/blob?comp=REDACTED&sig=REDACTED returned 403",
		},
		"a signature outside any URL": {
			"request signature sig=SIG, password=PW",
			"request signature sig=REDACTED, password=REDACTED",
		},
		"authorization credentials": {
			"Authorization: SharedKey dev:SIG= Authorization: Bearer eyJ0",
			"Authorization: SharedKey REDACTED Authorization: Bearer REDACTED",
		},
		"a URL quoted inside a JSON string keeps the escape of its closing quote": {
			`{"msg":"get: Get \"http://h/b?sig=SIG\": dial","err":"sig=SIG\"x"}`,
			`{"msg":"get: Get \"http://h/b?sig=REDACTED\": dial","err":"sig=REDACTED\"x"}`,
		},
		"text without secrets is unchanged": {
			`/lake/t/date=2024-01-31/part-0.parquet: stat: no such file or directory; s3://b/t/_sluice/v/00000000000000000001.json: get: not found`,
			`/lake/t/date=2024-01-31/part-0.parquet: stat: no such file or directory; s3://b/t/_sluice/v/00000000000000000001.json: get: not found`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := cloud.Redact(c.in)
			if got != c.want {
				t.Errorf("Redact(%q)\n = %q\nwant %q", c.in, got, c.want)
			}
			if again := cloud.Redact(got); again != got {
				t.Errorf("Redact is not idempotent: %q then %q", got, again)
			}
			for _, secret := range []string{"SECRETSIG", "PASS", "KEY/+", "SIG", "TOKEN", "TOK", "abc123", "AKIA", "PW", "eyJ0"} {
				if strings.Contains(c.in, secret) && strings.Contains(got, secret) {
					t.Errorf("Redact(%q) = %q still holds %q", c.in, got, secret)
				}
			}
		})
	}
}

// TestAzureSASNeverInErrors runs every store operation with a SAS
// connection string, against a port where nothing listens (the transport
// error, whose text embeds the request URL and its sig) and against
// Azurite refusing the forged signature: no error's text, nor the text of
// any error it wraps, holds the signature; errors.As still finds the
// transport's *url.Error.
func TestAzureSASNeverInErrors(t *testing.T) {
	const sas = "sv=2022-11-02&ss=b&srt=sco&sp=rwdlac&se=2099-01-01T00:00:00Z&spr=http&sig=SENTINELSIG%2Fx%3D"
	var live string
	for _, kv := range strings.Split(testenv.AzuriteConnectionString(t, testenv.AzuriteAccountKey), ";") {
		if v, ok := strings.CutPrefix(kv, "BlobEndpoint="); ok {
			live = v
		}
	}
	for name, endpoint := range map[string]string{
		"nothing listens": "http://127.0.0.1:1/" + testenv.AzuriteAccount,
		"Azurite refuses": live,
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "BlobEndpoint="+endpoint+";SharedAccessSignature="+sas)
			st, err := cloud.OpenWithOptions(context.Background(), "az://"+testenv.AzuriteAccount+"/"+testenv.NewContainer(t)+"/t", cloud.Options{MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			errs := map[string]error{}
			_, _, errs["get"] = st.Get(ctx, "k")
			_, errs["get range"] = st.GetRange(ctx, "k", 1, 2)
			_, errs["stat"] = st.Stat(ctx, "k")
			_, errs["put"] = st.Put(ctx, "k", strings.NewReader("x"), 1, cloud.PutOptions{})
			_, errs["put if absent"] = st.Put(ctx, "k", strings.NewReader("x"), 1, cloud.PutOptions{IfAbsent: true})
			errs["list"] = st.List(ctx, "", func(cloud.ObjectInfo) error { return nil })
			errs["delete"] = st.Delete(ctx, "k")
			for op, err := range errs {
				if err == nil {
					t.Errorf("%s: no error", op)
					continue
				}
				// The text printed, and that of the causes it wraps.
				msgs := []string{err.Error()}
				if u, ok := err.(interface{ Unwrap() []error }); ok {
					for _, c := range u.Unwrap() {
						msgs = append(msgs, c.Error())
					}
				}
				for _, msg := range msgs {
					if strings.Contains(msg, "SENTINELSIG") {
						t.Errorf("%s: error text holds the SAS signature: %s", op, msg)
					}
				}
				var ue *url.Error
				if name == "nothing listens" && !errors.As(err, &ue) {
					t.Errorf("%s: %v: errors.As finds no *url.Error", op, err)
				}
			}
		})
	}
}
