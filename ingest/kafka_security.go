package ingest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	mskiam "github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluice-data/sluice/cloud"
)

// Errors of a Kafka run's connection that no retry fixes, tested with
// errors.Is.
var (
	// ErrKafkaAuth: the broker refused the run's SASL credentials, or its
	// mechanism, or wants SASL from a run that gives none.
	ErrKafkaAuth = errors.New("authentication failed")
	// ErrKafkaTLS: a TLS handshake failed on a certificate: the broker's,
	// which the run does not trust or whose name does not match, or the
	// run's own, which the broker refused (or did not get).
	ErrKafkaTLS = errors.New("TLS handshake failed")
	// ErrKafkaOption: a Kafka connection option the run cannot use (a
	// *KafkaOptionError): an unknown mechanism, a CA file that does not
	// parse, a credential that is not set.
	ErrKafkaOption = errors.New("bad Kafka connection option")
)

// SASL mechanisms, as KafkaSecurity.SASL names them. Kafka's own
// spellings (SCRAM-SHA-512, AWS_MSK_IAM) are accepted too.
const (
	SASLPlain       = "plain"
	SASLScramSHA256 = "scram-sha-256"
	SASLScramSHA512 = "scram-sha-512"
	SASLOAuthBearer = "oauthbearer"
	SASLAWSMSKIAM   = "aws-msk-iam"
)

// The environment variables a Kafka run takes its SASL user name and
// password from, unless KafkaSecurity gives them.
const (
	EnvKafkaUsername = "KAFKA_USERNAME"
	EnvKafkaPassword = "KAFKA_PASSWORD"
)

// tokenCommandTimeout bounds one run of SASLTokenCommand.
const tokenCommandTimeout = time.Minute

// KafkaSecurity says how a Kafka run connects to its brokers: TLS, SASL,
// or both. It is no part of the source's identity: the same brokers and
// topic are the same checkpoint whatever the connection. The zero value
// connects in plaintext without SASL. Its credentials never show in an
// error or a log line.
type KafkaSecurity struct {
	// TLS connects with TLS, verifying the brokers' certificates against
	// the system's roots. Any TLS field below implies it.
	TLS bool
	// TLSCA is a PEM file of the CA certificates the brokers' must chain
	// to, instead of the system's roots.
	TLSCA string
	// TLSCert and TLSKey are PEM files of the client certificate and its
	// key, for brokers that authenticate clients by certificate: both or
	// neither.
	TLSCert, TLSKey string
	// TLSServerName is the name the brokers' certificates must hold.
	// Empty: each broker's host.
	TLSServerName string
	// TLSInsecureSkipVerify accepts any certificate a broker shows: the
	// connection is encrypted but anyone on the path may read and change
	// it. Every run using it logs a warning.
	TLSInsecureSkipVerify bool
	// SASL is the mechanism: SASLPlain, SASLScramSHA256,
	// SASLScramSHA512, SASLOAuthBearer or SASLAWSMSKIAM. Empty: no SASL.
	SASL string
	// SASLUsername is the PLAIN or SCRAM user. Empty: $KAFKA_USERNAME.
	SASLUsername string
	// SASLPassword is the PLAIN or SCRAM password. Empty: the content of
	// SASLPasswordFile, else $KAFKA_PASSWORD.
	SASLPassword Secret
	// SASLPasswordFile holds the password (a trailing newline is not
	// part of it), read again on each connection.
	SASLPasswordFile string
	// SASLTokenFile holds the OAUTHBEARER token, read again on each
	// authentication, so that a refresher may replace it.
	SASLTokenFile string
	// SASLTokenCommand prints the OAUTHBEARER token on its standard
	// output; it runs through /bin/sh -c on each authentication.
	SASLTokenCommand string
}

// Secret is a credential. It formats as "[redacted]" with every verb and
// marshals so too, so that a value holding one never prints it; Reveal
// returns it.
type Secret string

const redacted = "[redacted]"

// String returns "[redacted]".
func (Secret) String() string { return redacted }

// GoString returns "[redacted]".
func (Secret) GoString() string { return redacted }

// Format writes "[redacted]", whatever the verb.
func (Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// MarshalText returns "[redacted]".
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Reveal returns the secret itself.
func (s Secret) Reveal() string { return string(s) }

// KafkaOptionError is a KafkaSecurity setting refused: Option names it as
// the command line does, without the dashes (tls-ca), and Msg says why.
// It matches ErrKafkaOption.
type KafkaOptionError struct {
	Option string
	Msg    string
}

func (e *KafkaOptionError) Error() string { return "--" + e.Option + " " + e.Msg }

// Is makes a KafkaOptionError match ErrKafkaOption.
func (e *KafkaOptionError) Is(target error) bool { return target == ErrKafkaOption }

func optionError(option, format string, args ...any) *KafkaOptionError {
	return &KafkaOptionError{Option: option, Msg: fmt.Sprintf(format, args...)}
}

// TLSEnabled reports whether the run connects with TLS.
func (s KafkaSecurity) TLSEnabled() bool {
	return s.TLS || s.TLSCA != "" || s.TLSCert != "" || s.TLSKey != "" || s.TLSServerName != "" || s.TLSInsecureSkipVerify
}

// mechanism is SASL in the spelling of the SASL constants.
func (s KafkaSecurity) mechanism() string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s.SASL)), "_", "-")
}

// Problems lists the settings that cannot go together, or that name what
// does not exist, without reading a file or the environment.
func (s KafkaSecurity) Problems() []*KafkaOptionError {
	var ps []*KafkaOptionError
	add := func(option, format string, args ...any) { ps = append(ps, optionError(option, format, args...)) }
	switch {
	case s.TLSCert != "" && s.TLSKey == "":
		add("tls-cert", "without --tls-key: give both, or neither")
	case s.TLSKey != "" && s.TLSCert == "":
		add("tls-key", "without --tls-cert: give both, or neither")
	}
	if s.TLSInsecureSkipVerify && s.TLSCA != "" {
		add("tls-insecure-skip-verify", "with --tls-ca: the CA would never be checked; give one or the other")
	}
	given := map[string]bool{"sasl-username": s.SASLUsername != "", "sasl-password": s.SASLPassword != "",
		"sasl-password-file": s.SASLPasswordFile != "", "sasl-token-file": s.SASLTokenFile != "",
		"sasl-token-command": s.SASLTokenCommand != ""}
	unused := func(why string, options ...string) {
		for _, o := range options {
			if given[o] {
				add(o, "%s", why)
			}
		}
	}
	switch m := s.mechanism(); m {
	case "":
		unused("without --sasl", "sasl-username", "sasl-password", "sasl-password-file", "sasl-token-file", "sasl-token-command")
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		unused("is for --sasl oauthbearer", "sasl-token-file", "sasl-token-command")
		if given["sasl-password"] && given["sasl-password-file"] {
			add("sasl-password-file", "with a sasl_password: give one")
		}
	case SASLOAuthBearer:
		unused("is not used by --sasl oauthbearer, which sends a token", "sasl-username", "sasl-password", "sasl-password-file")
		switch {
		case !given["sasl-token-file"] && !given["sasl-token-command"]:
			add("sasl", "oauthbearer needs --sasl-token-file or --sasl-token-command")
		case given["sasl-token-file"] && given["sasl-token-command"]:
			add("sasl-token-command", "with --sasl-token-file: give one")
		}
	case SASLAWSMSKIAM:
		unused("is not used by --sasl aws-msk-iam, whose credentials are the AWS default chain's",
			"sasl-username", "sasl-password", "sasl-password-file", "sasl-token-file", "sasl-token-command")
	default:
		add("sasl", "%q: want plain, scram-sha-256, scram-sha-512, oauthbearer or aws-msk-iam", s.SASL)
	}
	return ps
}

// TLSConfig reads the TLS files and returns the configuration the run
// dials the brokers with; nil without TLS.
func (s KafkaSecurity) TLSConfig() (*tls.Config, error) {
	if !s.TLSEnabled() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.TLSServerName, InsecureSkipVerify: s.TLSInsecureSkipVerify}
	if s.TLSCA != "" {
		pem, err := os.ReadFile(s.TLSCA)
		if err != nil {
			return nil, optionError("tls-ca", "%v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, optionError("tls-ca", "%s: no PEM certificate in it", s.TLSCA)
		}
	}
	if s.TLSCert != "" || s.TLSKey != "" {
		if s.TLSCert == "" || s.TLSKey == "" {
			return nil, optionError("tls-cert", "and --tls-key: give both, or neither")
		}
		pair, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
		if err != nil {
			return nil, optionError("tls-cert", "%s with --tls-key %s: %v", s.TLSCert, s.TLSKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// username is the PLAIN or SCRAM user.
func (s KafkaSecurity) username() string {
	return cmp.Or(s.SASLUsername, os.Getenv(EnvKafkaUsername))
}

// password returns the PLAIN or SCRAM password, the file's as it is now.
func (s KafkaSecurity) password() (string, error) {
	switch {
	case s.SASLPassword != "":
		return s.SASLPassword.Reveal(), nil
	case s.SASLPasswordFile != "":
		b, err := os.ReadFile(s.SASLPasswordFile)
		if err != nil {
			return "", optionError("sasl-password-file", "%v", err)
		}
		p := strings.TrimRight(string(b), "\r\n")
		if p == "" {
			return "", optionError("sasl-password-file", "%s is empty", s.SASLPasswordFile)
		}
		return p, nil
	}
	if p := os.Getenv(EnvKafkaPassword); p != "" {
		return p, nil
	}
	return "", optionError("sasl", "%s needs a password: set %s or give --sasl-password-file", s.mechanism(), EnvKafkaPassword)
}

// SASLMechanism returns the franz-go mechanism the run authenticates
// with, nil without SASL. It checks now that the credentials are there
// (the user name and password, the token file), and the mechanism reads
// them again on each authentication: a rotated password file, token
// file or token, or refreshed AWS credentials, are used from the next
// connection on.
func (s KafkaSecurity) SASLMechanism(ctx context.Context) (sasl.Mechanism, error) {
	if ps := s.Problems(); len(ps) > 0 {
		return nil, ps[0]
	}
	switch m := s.mechanism(); m {
	case "":
		return nil, nil
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		user := s.username()
		if user == "" {
			return nil, optionError("sasl", "%s needs a user name: set %s or give --sasl-username", m, EnvKafkaUsername)
		}
		if _, err := s.password(); err != nil {
			return nil, err
		}
		switch m {
		case SASLPlain:
			return plain.Plain(func(context.Context) (plain.Auth, error) {
				p, err := s.password()
				return plain.Auth{User: user, Pass: p}, err
			}), nil
		case SASLScramSHA256:
			return scram.Sha256(func(context.Context) (scram.Auth, error) {
				p, err := s.password()
				return scram.Auth{User: user, Pass: p}, err
			}), nil
		}
		return scram.Sha512(func(context.Context) (scram.Auth, error) {
			p, err := s.password()
			return scram.Auth{User: user, Pass: p}, err
		}), nil
	case SASLOAuthBearer:
		if s.SASLTokenFile != "" {
			if _, err := s.token(ctx); err != nil {
				return nil, err
			}
		}
		return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
			t, err := s.token(ctx)
			return oauth.Auth{Token: t}, err
		}), nil
	}
	return s.mskIAM(ctx)
}

// token returns the OAUTHBEARER token: the token file's content now, or
// what the token command prints now, trimmed.
func (s KafkaSecurity) token(ctx context.Context) (string, error) {
	if s.SASLTokenFile != "" {
		b, err := os.ReadFile(s.SASLTokenFile)
		if err != nil {
			return "", optionError("sasl-token-file", "%v", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", optionError("sasl-token-file", "%s is empty", s.SASLTokenFile)
		}
		return t, nil
	}
	return runTokenCommand(ctx, s.SASLTokenCommand)
}

// runTokenCommand runs command through /bin/sh -c and returns its
// standard output, trimmed. Its error holds the exit status and the last
// line of the command's standard error, never its output or the command.
func runTokenCommand(ctx context.Context, command string) (string, error) {
	const sh = "/bin/sh"
	if _, err := os.Stat(sh); err != nil {
		return "", optionError("sasl-token-command", "needs %s, which this system does not have", sh)
	}
	ctx, cancel := context.WithTimeout(ctx, tokenCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-c", command)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = 1<<20, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second // a child left holding the pipes
	if err := cmd.Run(); err != nil {
		why := err.Error() // "exit status 3", "signal: killed": never the output
		if ctx.Err() != nil {
			why = fmt.Sprintf("did not finish within %s", tokenCommandTimeout)
		}
		if line := lastLine(stderr.String()); line != "" {
			why += ": " + cloud.OneLine(line, 200)
		}
		return "", fmt.Errorf("--sasl-token-command failed: %s", why)
	}
	if stdout.cut {
		return "", errors.New("--sasl-token-command printed more than 1MiB: want one token")
	}
	t := strings.TrimSpace(stdout.String())
	if t == "" {
		return "", errors.New("--sasl-token-command printed no token")
	}
	return t, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
	cut bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.cut = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// mskIAM is the AWS_MSK_IAM mechanism, signing each authentication with
// the credentials the AWS default chain gives then: its provider caches
// and refreshes them.
func (s KafkaSecurity) mskIAM(ctx context.Context) (sasl.Mechanism, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, optionError("sasl", "aws-msk-iam: AWS configuration: %v", err)
	}
	if cfg.Credentials == nil {
		return nil, optionError("sasl", "aws-msk-iam: the AWS default chain gives no credentials")
	}
	creds := cfg.Credentials
	return mskiam.ManagedStreamingIAM(func(ctx context.Context) (mskiam.Auth, error) {
		c, err := creds.Retrieve(ctx)
		if err != nil {
			return mskiam.Auth{}, fmt.Errorf("aws-msk-iam: AWS credentials: %w", err)
		}
		return mskiam.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken}, nil
	}), nil
}

// kafkaConn is how one run connects: the client options of its TLS and
// SASL, and what it learns of its authentications, to explain a failure.
type kafkaConn struct {
	sec  KafkaSecurity
	opts []kgo.Opt
	auth *trackedMechanism // nil without SASL
}

// connect reads the TLS files and checks the credentials.
func (s KafkaSecurity) connect(ctx context.Context) (*kafkaConn, error) {
	c := &kafkaConn{sec: s}
	cfg, err := s.TLSConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		c.opts = append(c.opts, kgo.DialTLSConfig(cfg))
	}
	m, err := s.SASLMechanism(ctx)
	if err != nil {
		return nil, err
	}
	if m != nil {
		c.auth = &trackedMechanism{Mechanism: m}
		c.opts = append(c.opts, kgo.SASL(c.auth))
	}
	return c, nil
}

// trackedMechanism counts the authentications begun and those the broker
// completed. A broker that refuses credentials answers
// SASL_AUTHENTICATION_FAILED, but some (Kafka before 1.0, kfake) close the
// connection instead, which the client sees as EOF and retries.
type trackedMechanism struct {
	sasl.Mechanism
	begun, completed atomic.Int64
}

// Authenticate begins an authentication of the mechanism, counted.
func (m *trackedMechanism) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	s, first, err := m.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	m.begun.Add(1)
	return &trackedSession{Session: s, m: m}, first, nil
}

type trackedSession struct {
	sasl.Session
	m *trackedMechanism
}

func (s *trackedSession) Challenge(resp []byte) (bool, []byte, error) {
	done, next, err := s.Session.Challenge(resp)
	if done && err == nil {
		s.m.completed.Add(1)
	}
	return done, next, err
}

// cutShort reports whether authentications began and the broker let none
// complete.
func (m *trackedMechanism) cutShort() bool {
	return m != nil && m.begun.Load() > 0 && m.completed.Load() == 0
}

// refused reports whether err is the broker refusing the run's
// credentials, or a TLS handshake refused on a certificate by either
// side: a retry would meet the same.
func (c *kafkaConn) refused(err error) bool { return c.authRefused(err) || tlsRefused(err) }

func (c *kafkaConn) authRefused(err error) bool {
	return errors.Is(err, ErrKafkaAuth) || errors.Is(err, kerr.SaslAuthenticationFailed) ||
		errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, kerr.IllegalSaslState) ||
		(c.auth.cutShort() && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)))
}

func tlsRefused(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		header   tls.RecordHeaderError
		alert    tls.AlertError
		op       *net.OpError
	)
	return errors.Is(err, ErrKafkaTLS) || errors.As(err, &verify) || errors.As(err, &unknown) ||
		errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &header) || errors.As(err, &alert) ||
		(errors.As(err, &op) && op.Op == "remote error") // an alert the broker sent: a certificate it refused
}

// explain marks a client error that no retry fixes with ErrKafkaAuth or
// ErrKafkaTLS and says what to check; others pass unchanged.
func (c *kafkaConn) explain(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrKafkaAuth), errors.Is(err, ErrKafkaTLS):
		return err
	case c.authRefused(err):
		if !errors.Is(err, kerr.SaslAuthenticationFailed) && c.auth.cutShort() {
			err = fmt.Errorf("the broker closed the connection during authentication: %w", err)
		}
		switch m := c.sec.mechanism(); m {
		case "":
			return fmt.Errorf("the broker wants SASL, and no --sasl was given: %w: %w", ErrKafkaAuth, err)
		case SASLPlain, SASLScramSHA256, SASLScramSHA512:
			return fmt.Errorf("SASL %s as user %q: %w (check the user name and password): %w", strings.ToUpper(m), c.sec.username(), ErrKafkaAuth, err)
		default:
			return fmt.Errorf("SASL %s: %w: %w", strings.ToUpper(m), ErrKafkaAuth, err)
		}
	case tlsRefused(err):
		hint := "check --tls-ca and --tls-server-name"
		if c.sec.TLSCert == "" {
			hint += ", and whether the broker wants a client certificate (--tls-cert, --tls-key)"
		}
		return fmt.Errorf("%w (%s): %w", ErrKafkaTLS, hint, err)
	}
	return err
}
