package iceberg

import (
	"errors"
	"strings"
	"testing"
)

func TestRESTLocations(t *testing.T) {
	for _, c := range []struct {
		loc, uri string
	}{
		{"iceberg+rest://catalog.example.com/api/catalog#lake.events", "https://catalog.example.com/api/catalog"},
		{"iceberg+rest://localhost:8181?tls=false#lake.raw.events", "http://localhost:8181"},
		{"iceberg+rest://h:443/iceberg?warehouse=lake&prefix=p&tls=true#a.b", "https://h:443/iceberg"},
	} {
		a, err := ParseTableURL(c.loc)
		if err != nil {
			t.Errorf("%s: %v", c.loc, err)
			continue
		}
		u, _, err := restURI(a)
		if err != nil || u.String() != c.uri || a.Kind != "rest" {
			t.Errorf("%s: kind %s, base URI %v (%v); want %s", c.loc, a.Kind, u, err, c.uri)
		}
	}
	for _, c := range []struct{ loc, says string }{
		{"iceberg+rest:///api#lake.events", "host"},
		{"iceberg+rest://u:SECRETPW@h/api#lake.events", "never in the location"},
		{"iceberg+rest://h/api?token=x#lake.events", `unknown parameter "token"`},
		{"iceberg+rest://h/api?tls=no#lake.events", "tls=true or tls=false"},
	} {
		_, err := ParseTableURL(c.loc)
		if !errors.Is(err, ErrTableURL) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "SECRETPW") {
			t.Errorf("%s: %v; want ErrTableURL saying %q", c.loc, err, c.says)
		}
	}
}

func TestRESTRefusalsSayWhichCredential(t *testing.T) {
	t.Setenv(EnvRESTCredential, "id:SECRETVALUE")
	err := restError(errors.New(`Get "https://h/v1/config": invalid_client: wrong secret SECRETVALUE`))
	if errors.Is(err, ErrRESTAuth) {
		t.Errorf("a plain error is not a refusal: %v", err)
	}
	if strings.Contains(err.Error(), "SECRETVALUE") {
		t.Errorf("the secret shows: %v", err)
	}
}
