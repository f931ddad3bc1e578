// Command mkimage builds sluice's container image without a Docker daemon:
// a static pure-Go binary at /sluice, the CA certificates of the build
// machine at /etc/ssl/certs/ca-certificates.crt, a non-root user and no
// shell, written as an OCI image layout in a tar file (docker load,
// podman load and skopeo copy oci-archive: read it). It builds the image
// the Dockerfile describes, layer for layer, so that `make image` works
// where no Docker daemon runs (CI, a laptop without Docker).
//
//	go run ./scripts/mkimage -o bin/sluice-image.tar [-tag ghcr.io/sluice-data/sluice:latest] [-arch amd64]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/sluice-data/sluice/scripts/mkimage/image"
)

func main() {
	var o image.Options
	flag.StringVar(&o.Out, "o", "bin/sluice-image.tar", "the OCI archive to write")
	flag.StringVar(&o.Tag, "tag", image.DefaultTag, "the image reference recorded in the archive")
	flag.StringVar(&o.Arch, "arch", "amd64", "the GOARCH of the binary and the image")
	flag.StringVar(&o.CACerts, "ca-certs", image.DefaultCACerts, "the CA bundle copied into the image")
	flag.StringVar(&o.Package, "pkg", "./cmd/sluice", "the package built as /sluice")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	digest, err := image.Build(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: %s (%s)\n", o.Out, o.Tag, digest)
}
