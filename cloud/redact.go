package cloud

import (
	"regexp"
	"strings"
)

// Redacted is what Redact puts in place of a secret.
const Redacted = "REDACTED"

var (
	// urlRE finds URLs in running text: a scheme, "://", then anything up
	// to white space, a quote, an angle bracket, ';' (the separator of
	// connection strings, which SAS tokens never hold unescaped) or '\\'
	// (which escapes the closing quote of a string in JSON or Go syntax).
	urlRE = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.\-]*://[^\s"'<>;\\]+`)
	// bareQueryRE finds a query string outside a URL ("/c/blob?sv=..&sig=..",
	// as some SDKs print a request's path): a '?' and key=value pairs.
	bareQueryRE = regexp.MustCompile(`\?[^\s"'<>;?#=&\\]*=[^\s"'<>;#\\]*`)
	// secretKeyRE finds key=value pairs whose value is a secret wherever
	// they stand: in connection strings, headers quoted by an SDK, or a
	// URL's query that was escaped into another one.
	secretKeyRE = regexp.MustCompile(`(?i)\b(AccountKey|sig|signature|X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|password|passwd|pwd|secret|token|access_token|client_secret)=([^\s"'<>&;,\\]+)`)
	// sasRE is a connection string's SharedAccessSignature, whose value is a
	// whole query string and runs to the next ';'.
	sasRE = regexp.MustCompile(`(?i)\b(SharedAccessSignature)=([^\s"'<>;\\]+)`)
	// authRE is an Authorization header's credential.
	authRE = regexp.MustCompile(`(?i)\b(Bearer|SharedKey|Basic)\s+([^\s"'<>,\\]+)`)
)

// Redact returns s with the secrets that locations, URLs and connection
// strings may carry replaced by Redacted, so that s can be printed, logged
// or put in a --json summary:
//
//   - the password of a URL's user info, in any scheme
//     (kafka://user:REDACTED@host/topic, postgres://user:REDACTED@host/db);
//   - every query value of a URL, and of a query string standing alone
//     (a SAS token's sig and se, an S3 presigned URL's X-Amz-Signature,
//     X-Amz-Credential and X-Amz-Security-Token alike: there is no list
//     of the harmless ones to go stale);
//   - the value of AccountKey=, SharedAccessSignature=, sig=, password=
//     and their kin wherever they stand, and Authorization credentials
//     (Bearer, SharedKey, Basic).
//
// The rest of s is kept as it is: hosts, paths, object keys and query keys
// are what a user needs to see which request failed. Redact is idempotent.
func Redact(s string) string {
	s = urlRE.ReplaceAllStringFunc(s, redactURL)
	s = bareQueryRE.ReplaceAllStringFunc(s, func(q string) string {
		q, tail := splitTrail(q)
		return "?" + redactQuery(q[1:]) + tail
	})
	s = replaceValue(s, sasRE, "=")
	s = replaceValue(s, secretKeyRE, "=")
	s = replaceValue(s, authRE, " ")
	return s
}

// replaceValue replaces the second group of each match of re (a key, sep,
// a value) by Redacted, keeping the punctuation that ends the match.
func replaceValue(s string, re *regexp.Regexp, sep string) string {
	return re.ReplaceAllStringFunc(s, func(m string) string {
		_, tail := splitTrail(m)
		return re.FindStringSubmatch(m)[1] + sep + Redacted + tail
	})
}

// redactURL redacts one URL found in text: the password of its user info
// and every query value. Punctuation that ends a sentence or a clause
// ("...: get") is left outside the redacted value.
func redactURL(u string) string {
	u, tail := splitTrail(u)
	scheme, rest, _ := strings.Cut(u, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, rest := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if user, _, hasPass := strings.Cut(authority[:at], ":"); hasPass {
			authority = user + ":" + Redacted + authority[at:]
		}
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		query, frag, hasFrag := strings.Cut(rest[q+1:], "#")
		rest = rest[:q+1] + redactQuery(query)
		if hasFrag {
			rest += "#" + frag
		}
	}
	return scheme + "://" + authority + rest + tail
}

// splitTrail splits the punctuation that ends a sentence or a clause off
// the end of a URL or query found in text.
func splitTrail(s string) (string, string) {
	end := len(s)
	for end > 0 && strings.IndexByte(".,:)]}", s[end-1]) >= 0 {
		end--
	}
	return s[:end], s[end:]
}

// redactQuery replaces every value of a query string (k=v&k2=v2) by
// Redacted, keeping the keys; a part without '=' may itself be a token and
// is replaced whole.
func redactQuery(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if p == "" {
			continue
		}
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=" + Redacted
		} else {
			parts[i] = Redacted
		}
	}
	return strings.Join(parts, "&")
}
