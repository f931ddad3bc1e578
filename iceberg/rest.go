package iceberg

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/catalog/rest"
)

// The environment a REST catalog's credentials come from: never the
// location, which is printed, logged and kept in pipeline files.
const (
	// EnvRESTToken is a bearer token sent as it is.
	EnvRESTToken = "SLUICE_ICEBERG_TOKEN"
	// EnvRESTCredential is an OAuth2 client credential, client_id:secret,
	// exchanged for a token at the catalog's token endpoint (its
	// /v1/oauth/tokens, or EnvRESTOAuthURI).
	EnvRESTCredential = "SLUICE_ICEBERG_CREDENTIAL"
	// EnvRESTScope is the scope asked for with a client credential;
	// "catalog" when unset.
	EnvRESTScope = "SLUICE_ICEBERG_SCOPE"
	// EnvRESTOAuthURI is the token endpoint, when not the catalog's own.
	EnvRESTOAuthURI = "SLUICE_ICEBERG_OAUTH_URI"
)

// restParams are the query parameters an iceberg+rest location takes:
// tls=false speaks plain HTTP (a catalog on localhost); warehouse names
// the warehouse the catalog's config is asked for (Polaris, Lakekeeper
// and Unity want one); prefix overrides the one the catalog's config
// gives; catalog is the name sluice gives the catalog in messages.
var restParams = []string{"tls", "warehouse", "prefix", "catalog"}

// checkRESTURL refuses an iceberg+rest location without a host, with
// credentials in it, or with a parameter sluice does not know.
func checkRESTURL(u *url.URL) error {
	if u.Host == "" {
		return fmt.Errorf("want iceberg+rest://host[:port]/path#ns.table (the catalog's base URL, before /v1)")
	}
	if u.User != nil {
		return fmt.Errorf("a REST catalog's credentials go in %s or %s, never in the location", EnvRESTCredential, EnvRESTToken)
	}
	for k, v := range u.Query() {
		if !slices.Contains(restParams, k) {
			return fmt.Errorf("unknown parameter %q (want %s)", k, strings.Join(restParams, ", "))
		}
		if k == "tls" && (len(v) != 1 || (v[0] != "true" && v[0] != "false")) {
			return fmt.Errorf("tls=%s: want tls=true or tls=false", strings.Join(v, ","))
		}
	}
	return nil
}

// restURI is the catalog's base URI: https unless tls=false.
func restURI(a TableAddress) (*url.URL, url.Values, error) {
	u, err := url.Parse(a.CatalogURL)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %s: %v", ErrTableURL, a, err)
	}
	q := u.Query()
	base := &url.URL{Scheme: "https", Host: u.Host, Path: u.Path}
	if q.Get("tls") == "false" {
		base.Scheme = "http"
	}
	return base, q, nil
}

// openREST opens the REST catalog of a through iceberg-go's client, its
// credentials from the environment: a bearer token, or an OAuth2 client
// credential the client exchanges for tokens and refreshes.
func openREST(ctx context.Context, a TableAddress) (*foreignCatalog, error) {
	base, q, err := restURI(a)
	if err != nil {
		return nil, err
	}
	opts := []rest.Option{rest.WithAdditionalProps(ioProperties())}
	if w := q.Get("warehouse"); w != "" {
		opts = append(opts, rest.WithWarehouseLocation(w))
	}
	if p := q.Get("prefix"); p != "" {
		opts = append(opts, rest.WithPrefix(p))
	}
	token, cred := os.Getenv(EnvRESTToken), os.Getenv(EnvRESTCredential)
	switch {
	case token != "" && cred != "":
		return nil, fmt.Errorf("open catalog %s: both %s and %s are set: set one", a, EnvRESTToken, EnvRESTCredential)
	case token != "":
		opts = append(opts, rest.WithOAuthToken(token))
	case cred != "":
		opts = append(opts, rest.WithCredential(cred))
		if s := os.Getenv(EnvRESTScope); s != "" {
			opts = append(opts, rest.WithScope(s))
		}
		if raw := os.Getenv(EnvRESTOAuthURI); raw != "" {
			au, err := url.Parse(raw)
			if err != nil || au.Host == "" {
				return nil, fmt.Errorf("open catalog %s: %s is not a URL", a, EnvRESTOAuthURI)
			}
			opts = append(opts, rest.WithAuthURI(au))
		}
	}
	name := a.CatalogName
	if name == "" {
		name = "rest"
	}
	cat, err := rest.NewCatalog(ctx, name, base.String(), opts...)
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", a, restError(err))
	}
	return &foreignCatalog{addr: a, cat: cat}, nil
}

// ErrRESTAuth is returned when a REST catalog refuses sluice's
// credentials (401 or 403, from the catalog or its token endpoint): a
// retry cannot change that.
var ErrRESTAuth = errors.New("the REST catalog refused the credentials")

// restError says which credential a refusal is about, and keeps the
// secrets out of the error's text.
func restError(err error) error {
	token, cred := os.Getenv(EnvRESTToken), os.Getenv(EnvRESTCredential)
	refused := errors.Is(err, rest.ErrUnauthorized) || errors.Is(err, rest.ErrForbidden) || errors.Is(err, rest.ErrAuthorizationExpired) ||
		(errors.Is(err, rest.ErrOAuthError) && oauthRefusal(err.Error()))
	if refused {
		which := "no credentials: set " + EnvRESTCredential + " or " + EnvRESTToken
		switch {
		case token != "":
			which = "the token in " + EnvRESTToken
		case cred != "":
			which = "the OAuth2 client credential in " + EnvRESTCredential
		}
		err = fmt.Errorf("%w (%s): %w", ErrRESTAuth, which, err)
	}
	return redactSecrets(err, token, cred)
}

// redactSecrets keeps the secrets out of an error's text, should a
// client or server echo them.
func redactSecrets(err error, secrets ...string) error {
	msg := err.Error()
	hit := false
	for _, s := range secrets {
		for _, part := range strings.Split(s, ":") {
			if len(part) >= 4 && strings.Contains(msg, part) {
				msg, hit = strings.ReplaceAll(msg, part, "***"), true
			}
		}
	}
	if !hit {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose text had a secret removed; errors.Is
// still sees the cause.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// oauthRefusal reports whether a token endpoint's error is one of
// RFC 6749's refusals of the client or its grant (iceberg-go keeps the
// error code, not the HTTP status): a server error or an unreachable
// endpoint is not one, and may pass.
func oauthRefusal(msg string) bool {
	for _, code := range []string{"invalid_client", "invalid_grant", "unauthorized_client", "invalid_scope", "invalid_request", "unsupported_grant_type"} {
		if strings.Contains(msg, code) {
			return true
		}
	}
	return false
}
