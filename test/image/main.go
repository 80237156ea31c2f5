// Command image builds gitpeer's container image without a container daemon: the same image the
// repository's Dockerfile describes (scratch, a CA bundle, a nonroot user, the static gitpeer
// binary as entrypoint, OCI labels), for every platform given, written as an OCI image layout
// (one index over all platforms, tagged v<version>) and a `docker load`-able tarball per platform.
//
//	go run . -version 0.1.0 -revision $(git rev-parse HEAD) -created $(git log -1 --format=%ct) \
//	    -ca /etc/ssl/certs/ca-certificates.crt -out ../../.cache/image \
//	    linux/amd64=../../.cache/image/bin/linux-amd64/gitpeer linux/arm64=...
//
// `make image` runs it.
package main

import (
	"archive/tar"
	"bytes"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed shape, as in the Dockerfile's final stage.
const (
	// UID and GID of the nonroot user (distroless's), as the Deployment's securityContext expects.
	nonrootID = 65532
	// binaryPath is where the gitpeer binary lives in the image, and the entrypoint.
	binaryPath = "/gitpeer"
	// caBundlePath is where Go's crypto/x509 looks first for the system roots on Linux.
	caBundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// dataDir is the agent's --data-dir in the image's default command and the Deployment.
	dataDir = "/data"
	// layoutDir is the OCI image layout's directory under -out.
	layoutDir = "oci"
	// refNameAnnotation tags the index in the layout (`skopeo copy oci:DIR:TAG ...`).
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

// passwd and group hold root and nonroot, like distroless's, so tools resolve UID 65532 to a name.
// The Dockerfile copies the same files.
var (
	//go:embed rootfs/etc/passwd
	passwd []byte
	//go:embed rootfs/etc/group
	group []byte
)

// options are the command-line inputs of one build.
type options struct {
	version, revision, source, repository, license string
	caBundle, out                                  string
	created                                        time.Time
	binaries                                       []binary
}

// binary is the gitpeer binary built for one platform.
type binary struct {
	platform v1.Platform
	path     string
}

func main() {
	o, err := parseOptions(os.Args[1:])
	if err == nil {
		err = build(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func parseOptions(args []string) (options, error) {
	var o options
	var created int64
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&o.version, "version", "", "the version stamped into the binary, without the leading v (the tag is v<version>)")
	fs.StringVar(&o.revision, "revision", "", "the source commit (org.opencontainers.image.revision)")
	fs.StringVar(&o.source, "source", "https://github.com/gitpeer/gitpeer", "the source repository URL")
	fs.StringVar(&o.repository, "repository", "ghcr.io/gitpeer/gitpeer", "the image repository the tarballs are tagged in")
	fs.StringVar(&o.license, "license", "Apache-2.0", "the SPDX license expression")
	fs.StringVar(&o.caBundle, "ca", "/etc/ssl/certs/ca-certificates.crt", "the PEM CA bundle copied into the image")
	fs.StringVar(&o.out, "out", ".cache/image", "the output directory (replaced)")
	fs.Int64Var(&created, "created", 0, "the creation time in Unix seconds (SOURCE_DATE_EPOCH), for reproducible images")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.version == "" || fs.NArg() == 0 {
		return o, errors.New("usage: image -version V [flags] os/arch=path-to-gitpeer...")
	}
	o.created = time.Unix(created, 0).UTC()
	for _, arg := range fs.Args() {
		platform, path, ok := strings.Cut(arg, "=")
		p, err := v1.ParsePlatform(platform)
		if !ok || err != nil || p.OS == "" || p.Architecture == "" {
			return o, fmt.Errorf("%q: want os/arch=path", arg)
		}
		o.binaries = append(o.binaries, binary{platform: *p, path: path})
	}
	return o, nil
}

// tagOf is the image tag for a version: v0.1.0 for 0.1.0.
func tagOf(version string) string { return "v" + version }

// tarballName is the file name of one platform's `docker load`-able tarball.
func tarballName(version string, p v1.Platform) string {
	return fmt.Sprintf("gitpeer-%s-%s-%s.tar", tagOf(version), p.OS, p.Architecture)
}

// build writes the OCI layout holding every platform's image and one tarball per platform.
func build(o options) error {
	ca, err := os.ReadFile(o.caBundle)
	if err != nil {
		return fmt.Errorf("CA bundle: %w", err)
	}
	ref, err := name.NewTag(o.repository + ":" + tagOf(o.version))
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(o.out, layoutDir)); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var index v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range o.binaries {
		p := b.platform
		img, err := platformImage(o, b, ca)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}},
		})
		tarPath := filepath.Join(o.out, tarballName(o.version, p))
		if err := tarball.WriteToFile(tarPath, ref, img); err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s %s\n", p, digest, tarPath)
	}
	dir, err := layout.Write(filepath.Join(o.out, layoutDir), empty.Index)
	if err != nil {
		return err
	}
	if err := dir.AppendIndex(index, layout.WithAnnotations(map[string]string{refNameAnnotation: tagOf(o.version)})); err != nil {
		return err
	}
	digest, err := index.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("index %s %s:%s (OCI layout %s)\n", digest, o.repository, tagOf(o.version), filepath.Join(o.out, layoutDir))
	return nil
}

// platformImage is one platform's image: a single layer over scratch and the Dockerfile's config.
func platformImage(o options, b binary, ca []byte) (v1.Image, error) {
	p := b.platform
	gitpeer, err := os.ReadFile(b.path)
	if err != nil {
		return nil, err
	}
	layerTar, err := rootfs(o.created, gitpeer, ca)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	cfg := &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: o.created},
		Config:       imageConfig(o),
		RootFS:       v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(mutate.MediaType(empty.Image, types.OCIManifestSchema1), cfg)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	return mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: o.created}, CreatedBy: "gitpeer test/image: " + binaryPath + ", CA bundle, nonroot user", Comment: "make image"},
		MediaType: types.OCILayer,
	})
}

// imageConfig is the container configuration, the same as the Dockerfile's final stage declares.
func imageConfig(o options) v1.Config {
	return v1.Config{
		Entrypoint: []string{binaryPath},
		Cmd:        []string{"agent", "--data-dir=" + dataDir},
		User:       strconv.Itoa(nonrootID) + ":" + strconv.Itoa(nonrootID),
		WorkingDir: "/",
		Volumes:    map[string]struct{}{dataDir: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "gitpeer",
			"org.opencontainers.image.description": "Liqo peering through a shared Git repository",
			"org.opencontainers.image.source":      o.source,
			"org.opencontainers.image.version":     o.version,
			"org.opencontainers.image.revision":    o.revision,
			"org.opencontainers.image.licenses":    o.license,
			"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
		},
	}
}

// entry is one file or directory of the image's single layer.
type entry struct {
	name string
	mode int64
	id   int
	body []byte
	dir  bool
}

// rootfs is the image's only layer as an uncompressed tar: directories and files in a fixed
// order with fixed owners and times, so the same inputs give the same digest.
func rootfs(modTime time.Time, gitpeer, ca []byte) ([]byte, error) {
	entries := []entry{
		{name: "data/", mode: 0o755, id: nonrootID, dir: true},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: group},
		{name: "etc/passwd", mode: 0o644, body: passwd},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(caBundlePath, "/"), mode: 0o644, body: ca},
		{name: strings.TrimPrefix(binaryPath, "/"), mode: 0o755, body: gitpeer},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.id, Gid: e.id, ModTime: modTime,
			Typeflag: tar.TypeReg, Size: int64(len(e.body)), Format: tar.FormatPAX,
		}
		if e.dir {
			hdr.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
