# sluice's image: a static pure-Go binary, CA certificates, a non-root user,
# no shell. `make image` builds the same image without a Docker daemon
# (scripts/mkimage) as an OCI archive; this file is for docker build:
#
#   docker build -t ghcr.io/sluice-data/sluice:latest .
#   docker run --rm ghcr.io/sluice-data/sluice:latest --version
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -buildvcs=auto -ldflags="-s -w" -o /out/sluice ./cmd/sluice \
 && mkdir -p /out/rootfs/etc/ssl/certs /out/rootfs/home/nonroot /out/rootfs/tmp \
 && cp /etc/ssl/certs/ca-certificates.crt /out/rootfs/etc/ssl/certs/ \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > /out/rootfs/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/rootfs/etc/group \
 && chown 65532:65532 /out/rootfs/home/nonroot && chmod 700 /out/rootfs/home/nonroot && chmod 1777 /out/rootfs/tmp

FROM scratch
COPY --from=build /out/rootfs/ /
COPY --from=build /out/sluice /sluice
ENV PATH=/ HOME=/home/nonroot TMPDIR=/tmp SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["/sluice"]
CMD ["--help"]
