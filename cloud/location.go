package cloud

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Kinds of location, as Location.Kind reports them.
const (
	KindLocal = "local"
	KindS3    = "s3"
	KindAzure = "azure"
)

// Location is a parsed store location: a folder on local disk, an S3 bucket
// plus prefix, or an Azure storage account, container and prefix.
type Location struct {
	// Kind is KindLocal, KindS3 or KindAzure.
	Kind string
	// Path is the absolute, cleaned folder of a local location.
	Path string
	// Account is the Azure storage account name.
	Account string
	// Bucket is the S3 bucket or the Azure container.
	Bucket string
	// Prefix is the key prefix inside the bucket, without leading or
	// trailing '/'; empty for the bucket's root.
	Prefix string
}

// ParseLocation parses a location as users write it:
//
//	/abs/path, rel/path, file:///abs/path      local disk (made absolute)
//	s3://bucket/prefix                         S3
//	az://account/container/prefix              Azure Blob
//	abfss://container@account.dfs.core.windows.net/prefix   ADLS Gen2
//	wasbs://container@account.blob.core.windows.net/prefix  Azure Blob
//
// Any other scheme, or a URL missing its bucket, container or account,
// fails with an error wrapping ErrUnsupportedURL that names the location
// (through Redact: a refused location may hold a secret).
//
// A URL location takes no query and no user info: credentials come from
// the environment (see Open), never from the location, which is printed,
// logged and recorded. A '?' would otherwise slip into object names
// (s3://b/t?x puts keys under "t?x"), or be dropped without a word
// (file:///t?x), or carry a SAS token that every error would then print.
// So a query is refused, with a message saying where the credential goes;
// a '?' that belongs in a name is written %3F in a file:// URL, or the
// location given as a plain path.
func ParseLocation(location string) (Location, error) {
	bad := func(why string) (Location, error) {
		return Location{}, fmt.Errorf("%q: %s: %w", Redact(location), why, ErrUnsupportedURL)
	}
	if location == "" {
		return bad("empty location")
	}
	scheme, rest, hasScheme := strings.Cut(location, "://")
	if !hasScheme || strings.ContainsAny(scheme, `/\`) {
		// A plain path. (A Windows drive letter would also land here.)
		abs, err := filepath.Abs(location)
		if err != nil {
			return bad(err.Error())
		}
		return Location{Kind: KindLocal, Path: abs}, nil
	}
	if why := credentialsInURL(strings.ToLower(scheme), rest); why != "" {
		return bad(why)
	}
	switch strings.ToLower(scheme) {
	case "file":
		u, err := url.Parse(location)
		if err != nil {
			return bad(err.Error())
		}
		if u.Host != "" && u.Host != "localhost" {
			return bad("file URLs must name a local absolute path (file:///abs/path)")
		}
		if !path.IsAbs(u.Path) {
			return bad("file URLs must name an absolute path")
		}
		return Location{Kind: KindLocal, Path: filepath.Clean(filepath.FromSlash(u.Path))}, nil
	case "s3":
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return bad("no bucket")
		}
		if why := badPrefix(prefix); why != "" {
			return bad(why)
		}
		return Location{Kind: KindS3, Bucket: bucket, Prefix: cleanPrefix(prefix)}, nil
	case "az":
		account, rest, _ := strings.Cut(rest, "/")
		container, prefix, _ := strings.Cut(rest, "/")
		if account == "" || container == "" {
			return bad("want az://account/container/prefix")
		}
		if why := badAccount(account); why != "" {
			return bad(why)
		}
		if why := badPrefix(prefix); why != "" {
			return bad(why)
		}
		return Location{Kind: KindAzure, Account: account, Bucket: container, Prefix: cleanPrefix(prefix)}, nil
	case "abfss", "abfs", "wasbs", "wasb":
		authority, prefix, _ := strings.Cut(rest, "/")
		container, host, ok := strings.Cut(authority, "@")
		account, _, _ := strings.Cut(host, ".")
		if !ok || container == "" || account == "" {
			return bad("want " + scheme + "://container@account.<endpoint>/prefix")
		}
		if why := badAccount(account); why != "" {
			return bad(why)
		}
		if why := badPrefix(prefix); why != "" {
			return bad(why)
		}
		return Location{Kind: KindAzure, Account: account, Bucket: container, Prefix: cleanPrefix(prefix)}, nil
	default:
		return bad(fmt.Sprintf("unknown scheme %q (want a path, file://, s3://, az://, abfss:// or wasbs://)", scheme))
	}
}

// credentialsInURL says why a URL location with a query or user info is
// refused, or returns "" if it has neither. rest is the URL after "://".
func credentialsInURL(scheme, rest string) string {
	authority, _, _ := strings.Cut(rest, "/")
	azure := scheme == "az" || scheme == "abfss" || scheme == "abfs" || scheme == "wasbs" || scheme == "wasb"
	if strings.Contains(rest, "?") {
		switch {
		case azure:
			return "an Azure location takes no query: give a SAS token as the SharedAccessSignature of AZURE_STORAGE_CONNECTION_STRING, beside its BlobEndpoint"
		case scheme == "s3":
			return "an s3:// location takes no query (it would become part of object names): credentials come from the AWS environment"
		case scheme == "file":
			return "a file:// location takes no query: write a '?' in a folder name as %3F, or give a plain path"
		}
	}
	// abfss:// and wasbs:// name the container as the user info, so only
	// a password there is refused.
	user, _, hasUser := strings.Cut(authority, "@")
	if hasUser && (scheme == "s3" || scheme == "az" || (azure && strings.Contains(user, ":"))) {
		return "a " + scheme + ":// location takes no user info: credentials come from the environment"
	}
	return ""
}

// badAccount says why an Azure storage account name is refused, or
// returns "": Azure's are 3 to 24 lower-case letters and digits, and a
// name with anything else (an '@' of a mistyped abfss:// URL, say) would
// not parse back from the location's canonical az:// form.
func badAccount(account string) string {
	if len(account) < 3 || len(account) > 24 || strings.IndexFunc(account, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') }) >= 0 {
		return fmt.Sprintf("storage account %q: Azure's are 3 to 24 lower-case letters and digits", account)
	}
	return ""
}

// badPrefix says why a URL location's prefix is refused, or returns "":
// one that climbs ('.' or '..' segments, which an HTTP client or service
// may resolve out of the bucket or container), or holds NUL or a
// backslash, which no key may (see ErrInvalidKey).
func badPrefix(prefix string) string {
	if strings.ContainsAny(prefix, "\x00\\") {
		return "the prefix holds NUL or a backslash"
	}
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "." || seg == ".." {
			return "the prefix has a '.' or '..' segment"
		}
	}
	return ""
}

// cleanPrefix trims the slashes around a prefix and collapses repeated ones.
func cleanPrefix(p string) string {
	parts := strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
	return strings.Join(parts, "/")
}

// String returns the location in its canonical form: an absolute path,
// s3://bucket/prefix or az://account/container/prefix.
func (l Location) String() string {
	switch l.Kind {
	case KindLocal:
		return l.Path
	case KindS3:
		return joinKey("s3://"+l.Bucket, l.Prefix)
	case KindAzure:
		return joinKey("az://"+l.Account+"/"+l.Bucket, l.Prefix)
	}
	return ""
}

// Join returns the location of key under location, joined with one '/' (or
// the OS separator on local disk): Join("s3://b/t", "_sluice/v/1.json") is
// "s3://b/t/_sluice/v/1.json". A location that does not parse is joined
// textually.
func Join(location, key string) string {
	l, err := ParseLocation(location)
	if err != nil {
		return joinKey(strings.TrimRight(location, "/"), key)
	}
	if l.Kind == KindLocal {
		return filepath.Join(l.Path, filepath.FromSlash(key))
	}
	return joinKey(l.String(), key)
}

func joinKey(base, key string) string {
	key = strings.TrimLeft(key, "/")
	if key == "" {
		return base
	}
	return base + "/" + key
}

// Options tunes how Open reaches a store. The zero value is valid and
// means every default.
type Options struct {
	// HTTPClient carries the requests to S3 or Azure. Nil means the SDK's
	// own tuned client. Tests use it to inject faults in transport.
	HTTPClient *http.Client
	// MaxAttempts is how many times the SDK tries one request (the first
	// try included) on throttling, 5xx and timeouts before giving up.
	// 0 means DefaultMaxAttempts.
	MaxAttempts int
	// ListPageSize is how many keys one List request asks for. 0 means the
	// service's maximum (1000 on S3, 5000 on Azure). Local disk ignores it.
	ListPageSize int
}

// DefaultMaxAttempts is Options.MaxAttempts when left zero.
const DefaultMaxAttempts = 5

// DefaultOptions returns the options Open uses.
func DefaultOptions() Options { return Options{MaxAttempts: DefaultMaxAttempts} }

// Validate names every bad field.
func (o Options) Validate() error {
	var bad []string
	if o.MaxAttempts < 0 {
		bad = append(bad, fmt.Sprintf("MaxAttempts %d < 0", o.MaxAttempts))
	}
	if o.ListPageSize < 0 || o.ListPageSize > 5000 {
		bad = append(bad, fmt.Sprintf("ListPageSize %d not in [0, 5000]", o.ListPageSize))
	}
	if len(bad) > 0 {
		return fmt.Errorf("cloud options: %s", strings.Join(bad, "; "))
	}
	return nil
}

func (o Options) maxAttempts() int {
	if o.MaxAttempts == 0 {
		return DefaultMaxAttempts
	}
	return o.MaxAttempts
}

// Open returns the store rooted at location (see ParseLocation for the
// forms), with DefaultOptions. Credentials come from the environment:
// the AWS SDK's standard chain (plus AWS_ENDPOINT_URL and
// AWS_S3_USE_PATH_STYLE) for S3; AZURE_STORAGE_CONNECTION_STRING when set,
// else azidentity's DefaultAzureCredential, for Azure. Open does not touch
// the network: a missing bucket or refused credentials show on first use.
// A local root folder is created on first Put.
func Open(ctx context.Context, location string) (Store, error) {
	return OpenWithOptions(ctx, location, DefaultOptions())
}

// OpenWithOptions is Open with explicit options.
func OpenWithOptions(ctx context.Context, location string, opts Options) (Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("open %s: %w", Redact(location), err)
	}
	l, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	switch l.Kind {
	case KindLocal:
		return newLocalStore(l.Path), nil
	case KindS3:
		return newS3Store(ctx, l, opts)
	case KindAzure:
		return newAzureStore(ctx, l, opts)
	}
	return nil, fmt.Errorf("%q: %w", Redact(location), ErrUnsupportedURL)
}
