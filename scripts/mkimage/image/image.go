// Package image builds sluice's container image as an OCI image layout in
// a tar file, with go-containerregistry and no Docker daemon: one layer
// holding the static binary at /sluice, the CA bundle, a passwd entry and
// home folder for the non-root user 65532 (distroless's "nonroot"), and a
// world-writable /tmp for spills; no shell. The Dockerfile at the
// repository root describes the same image for docker build.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DefaultTag is the reference the Kubernetes manifests under
// deploy/kubernetes/ name.
const DefaultTag = "ghcr.io/sluice-data/sluice:latest"

// DefaultCACerts is Debian's (and Alpine's, and the golang image's) CA
// bundle, where Go's crypto/x509 looks first on Linux.
const DefaultCACerts = "/etc/ssl/certs/ca-certificates.crt"

// User is the image's user and group: not root.
const User = "65532:65532"

// Options say what to build and where.
type Options struct {
	// Out is the OCI archive written (a tar of an OCI image layout).
	Out string
	// Tag is recorded as the image's org.opencontainers.image.ref.name.
	Tag string
	// Arch is the GOARCH of the binary and the image's architecture.
	Arch string
	// CACerts is the PEM bundle copied to /etc/ssl/certs/ca-certificates.crt.
	CACerts string
	// Package is the Go package built as /sluice, from the current folder.
	Package string
}

// epoch is every file's modification time: the same sources give the
// same layer.
var epoch = time.Unix(0, 0).UTC()

// Build builds the binary, then the image, and writes the archive. It
// returns the image's manifest digest.
func Build(ctx context.Context, o Options) (v1.Hash, error) {
	if o.Tag == "" {
		o.Tag = DefaultTag
	}
	if o.CACerts == "" {
		o.CACerts = DefaultCACerts
	}
	certs, err := os.ReadFile(o.CACerts)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("CA bundle: %w (install Debian's ca-certificates, or give -ca-certs)", err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(certs) {
		return v1.Hash{}, fmt.Errorf("CA bundle %s holds no PEM certificate", o.CACerts)
	}
	tmp, err := os.MkdirTemp("", "sluice-image-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "sluice")
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=auto", "-ldflags=-s -w", "-o", bin, o.Package)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.Arch)
	if out, err := build.CombinedOutput(); err != nil {
		return v1.Hash{}, fmt.Errorf("go build %s: %w\n%s", o.Package, err, out)
	}
	binary, err := os.ReadFile(bin)
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := Image(binary, certs, o.Arch)
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	dir := filepath.Join(tmp, "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("OCI layout: %w", err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Tag})); err != nil {
		return v1.Hash{}, fmt.Errorf("OCI layout: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return v1.Hash{}, err
	}
	if err := tarDir(dir, o.Out); err != nil {
		return v1.Hash{}, fmt.Errorf("write %s: %w", o.Out, err)
	}
	return digest, nil
}

// Image is the image of binary with the CA bundle certs, for arch.
func Image(binary, certs []byte, arch string) (v1.Image, error) {
	files, err := rootFS(binary, certs)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/sluice"}
	cfg.Config.Cmd = []string{"--help"}
	cfg.Config.User = User
	cfg.Config.WorkingDir = "/home/nonroot"
	cfg.Config.Env = []string{"PATH=/", "HOME=/home/nonroot", "TMPDIR=/tmp", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": "https://github.com/sluice-data/sluice",
		"org.opencontainers.image.title": "sluice"}
	return mutate.ConfigFile(img, cfg)
}

// rootFS is the layer's tar: folders, then files, in a fixed order.
func rootFS(binary, certs []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: epoch})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	err := errors.Join(
		dir("etc", 0o755, 0), dir("etc/ssl", 0o755, 0), dir("etc/ssl/certs", 0o755, 0),
		dir("home", 0o755, 0), dir("home/nonroot", 0o700, 65532), dir("tmp", 0o1777, 0),
		file("etc/passwd", 0o644, []byte(passwd)), file("etc/group", 0o644, []byte(group)),
		file("etc/ssl/certs/ca-certificates.crt", 0o644, certs),
		file("sluice", 0o755, binary),
		tw.Close())
	if err != nil {
		return nil, fmt.Errorf("layer tar: %w", err)
	}
	return buf.Bytes(), nil
}

// tarDir writes the files under dir into the tar file out, named
// relative to dir: an OCI layout archive.
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.ToSlash(rel) + "/", Mode: 0o755, ModTime: epoch})
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	return errors.Join(walkErr, tw.Close(), f.Close())
}
