package image_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/sluice-data/sluice/scripts/mkimage/image"
)

// The archive make image writes is an OCI layout whose one image, read
// back through go-containerregistry, runs as a non-root user, holds no
// shell, carries a CA bundle, and whose /sluice, unpacked from the layer,
// prints its version.
func TestImageRunsSluiceVersion(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sluice-image.tar")
	_, err := image.Build(context.Background(), image.Options{Out: out, Arch: runtime.GOARCH, Package: "../../../cmd/sluice"})
	if err != nil {
		t.Fatal(err)
	}
	lay := filepath.Join(dir, "layout")
	untar(t, out, lay)
	idx, err := layout.ImageIndexFromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != image.DefaultTag {
		t.Fatalf("index %+v: want one image named %s", im.Manifests, image.DefaultTag)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != image.User || strings.HasPrefix(cfg.Config.User, "0") || cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("config user %q os %q arch %q: want %s, linux, %s", cfg.Config.User, cfg.OS, cfg.Architecture, image.User, runtime.GOARCH)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/sluice" {
		t.Errorf("entrypoint %q: want [/sluice]", cfg.Config.Entrypoint)
	}
	root := filepath.Join(dir, "rootfs")
	files := extract(t, mutate.Extract(img), root)
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox"} {
		if files[shell] {
			t.Errorf("the image holds %s: it should have no shell", shell)
		}
	}
	certs, err := os.ReadFile(filepath.Join(root, "etc/ssl/certs/ca-certificates.crt"))
	if err != nil || !x509.NewCertPool().AppendCertsFromPEM(certs) {
		t.Errorf("CA bundle: %v; want PEM certificates", err)
	}
	if runtime.GOOS != "linux" {
		t.Fatalf("the image's binary is for linux; this test runs it, and runs on %s", runtime.GOOS)
	}
	var stdout bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "sluice"), "--version")
	cmd.Stdout, cmd.Stderr, cmd.Env = &stdout, os.Stderr, []string{"HOME=/nonexistent"}
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice --version from the image: %v", err)
	}
	if !strings.HasPrefix(stdout.String(), "sluice ") {
		t.Errorf("sluice --version printed %q; want a line starting \"sluice \"", stdout.String())
	}
}

// untar unpacks the tar file at src into dst.
func untar(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	extract(t, f, dst)
}

// extract writes the regular files and folders of the tar stream r under
// dst and returns the names it held.
func extract(t *testing.T, r io.Reader, dst string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Clean(h.Name)
		if !filepath.IsLocal(name) {
			t.Fatalf("tar entry %q leaves its folder", h.Name)
		}
		names[filepath.ToSlash(name)] = true
		p := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, os.FileMode(h.Mode)&0o755|0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}
