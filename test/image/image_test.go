package main

import (
	"archive/tar"
	"bufio"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = "../.."

// builtImage locates what `make image` built: its output directory (GITPEER_IMAGE_DIR, else
// .cache/image) and the version it stamped (GITPEER_IMAGE_VERSION, else the one in the layout).
// `make test` sets both, and GITPEER_IMAGE_PLATFORMS, the platforms TestImage expects.
func builtImage(t *testing.T) (dir string, idx v1.ImageIndex, version string) {
	t.Helper()
	dir = os.Getenv("GITPEER_IMAGE_DIR")
	if dir == "" {
		dir = filepath.Join(repoRoot, ".cache", "image")
	}
	p, err := layout.FromPath(filepath.Join(dir, layoutDir))
	if err != nil {
		t.Fatalf("no image layout (run `make image` first): %v", err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("the layout's index.json has %d entries, want the one multi-platform index", len(m.Manifests))
	}
	tag := m.Manifests[0].Annotations[refNameAnnotation]
	version = os.Getenv("GITPEER_IMAGE_VERSION")
	if version == "" {
		version = strings.TrimPrefix(tag, "v")
	}
	if tag != tagOf(version) {
		t.Fatalf("layout tagged %q, want %q", tag, tagOf(version))
	}
	idx, err = top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return dir, idx, version
}

// TestImage pushes the built multi-platform image to an in-process registry, pulls it back per
// platform as a cluster would, and checks each image: the configuration the Deployment relies on
// (entrypoint, default command, nonroot user, platform, OCI labels with the stamped version), a
// root filesystem with no shell, a static binary for the platform, and, on this machine's
// platform, the binary extracted from the image printing the stamped version.
func TestImage(t *testing.T) {
	dir, idx, version := builtImage(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/gitpeer/gitpeer:" + tagOf(version))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	platforms := map[string]bool{}
	for _, d := range m.Manifests {
		platforms[d.Platform.String()] = true
		t.Run(d.Platform.String(), func(t *testing.T) {
			img, err := remote.Image(ref, remote.WithPlatform(*d.Platform))
			if err != nil {
				t.Fatal(err)
			}
			checkConfig(t, img, *d.Platform, version)
			files, headers := extract(t, img, t.TempDir())
			checkFiles(t, files, *d.Platform)
			checkOwners(t, headers)
			if d.Platform.OS == runtime.GOOS && d.Platform.Architecture == runtime.GOARCH {
				checkVersion(t, files[binaryPath], version)
			}
			checkTarball(t, filepath.Join(dir, tarballName(version, *d.Platform)), img)
		})
	}
	wantPlatforms := os.Getenv("GITPEER_IMAGE_PLATFORMS") // `make image`'s IMAGE_PLATFORMS
	if wantPlatforms == "" {
		wantPlatforms = "linux/amd64 linux/arm64"
	}
	for _, want := range strings.Fields(wantPlatforms) {
		if !platforms[want] {
			t.Errorf("the index has no %s image (has %v)", want, platforms)
		}
	}
}

// checkConfig checks the image configuration against what the Deployment and the Dockerfile expect.
func checkConfig(t *testing.T, img v1.Image, p v1.Platform, version string) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != p.OS || cfg.Architecture != p.Architecture {
		t.Errorf("config platform %s/%s, index says %s", cfg.OS, cfg.Architecture, p)
	}
	c := cfg.Config
	if strings.Join(c.Entrypoint, " ") != "/gitpeer" {
		t.Errorf("Entrypoint = %q, want [/gitpeer]", c.Entrypoint)
	}
	if strings.Join(c.Cmd, " ") != "agent --data-dir=/data" {
		t.Errorf("Cmd = %q, want [agent --data-dir=/data]", c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("User = %q, want 65532:65532 (the Deployment's runAsUser and runAsGroup)", c.User)
	}
	if _, ok := c.Volumes["/data"]; !ok {
		t.Errorf("Volumes = %v, want /data (the agent's --data-dir; the root filesystem is read-only)", c.Volumes)
	}
	for _, label := range []string{"title", "description", "source", "revision", "licenses", "created"} {
		if c.Labels["org.opencontainers.image."+label] == "" {
			t.Errorf("label org.opencontainers.image.%s is missing", label)
		}
	}
	if got := c.Labels["org.opencontainers.image.version"]; got != version {
		t.Errorf("label org.opencontainers.image.version = %q, want %q", got, version)
	}
	checkDockerfile(t, c)
}

// checkDockerfile checks that the Dockerfile's final stage declares the same entrypoint, command,
// user, volume and labels (names, and fixed values) as the image `make image` built, so the two
// never drift apart.
func checkDockerfile(t *testing.T, c v1.Config) {
	t.Helper()
	final := dockerfileFinalStage(t)
	want := map[string]string{
		"ENTRYPOINT": jsonArray(t, c.Entrypoint),
		"CMD":        jsonArray(t, c.Cmd),
		"USER":       c.User,
		"VOLUME":     jsonArray(t, slices.Sorted(maps.Keys(c.Volumes))),
		"WORKDIR":    c.WorkingDir,
	}
	for instruction, value := range want {
		if got := final[instruction]; len(got) != 1 || got[0] != value {
			t.Errorf("Dockerfile final stage %s %q, the built image has %s", instruction, got, value)
		}
	}
	var labels []string
	for _, l := range final["LABEL"] {
		key, value, _ := strings.Cut(l, "=")
		labels = append(labels, key)
		// Fixed values must be equal; ${ARG} values come from the build (checked above).
		if value = strings.Trim(value, `"`); !strings.Contains(value, "${") && c.Labels[key] != value {
			t.Errorf("Dockerfile label %s=%q, the built image has %q", key, value, c.Labels[key])
		}
	}
	if got, want := strings.Join(labels, " "), strings.Join(slices.Sorted(maps.Keys(c.Labels)), " "); got != want {
		t.Errorf("Dockerfile labels %s, the built image has %s", got, want)
	}
}

// dockerfileFinalStage maps each instruction of the Dockerfile's last stage to its arguments (one
// LABEL argument per key=value line continuation; labels sorted).
func dockerfileFinalStage(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stage map[string][]string
	var logical string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			logical += strings.TrimSpace(cont) + "\n"
			continue
		}
		logical += line
		instruction, args, _ := strings.Cut(logical, " ")
		logical = ""
		instruction = strings.ToUpper(instruction)
		switch instruction {
		case "FROM":
			stage = map[string][]string{}
		case "LABEL":
			for _, l := range strings.Split(args, "\n") {
				stage[instruction] = append(stage[instruction], strings.TrimSpace(l))
			}
			slices.Sort(stage[instruction])
		default:
			stage[instruction] = append(stage[instruction], strings.TrimSpace(args))
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return stage
}

// extract unpacks the image's flattened filesystem into dir and returns the files by absolute
// path in the image, mapped to where they are on disk and to their tar headers.
func extract(t *testing.T, img v1.Image, dir string) (files map[string]string, headers map[string]*tar.Header) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files, headers = map[string]string{}, map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, headers
		}
		if err != nil {
			t.Fatal(err)
		}
		inImage := "/" + strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "/"), "/")
		onDisk := filepath.Join(dir, filepath.FromSlash(inImage))
		files[inImage], headers[inImage] = onDisk, hdr
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(onDisk, 0o755)
		case tar.TypeReg:
			err = writeFile(onDisk, tr, hdr.FileInfo().Mode().Perm())
		default:
			t.Errorf("%s: unexpected tar entry type %q", inImage, hdr.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(path string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// checkFiles checks the root filesystem: the binary is a static executable for the platform, the
// CA bundle and the nonroot user are there, and there is no shell (nor anything else).
func checkFiles(t *testing.T, files map[string]string, p v1.Platform) {
	t.Helper()
	for _, want := range []string{binaryPath, caBundlePath, "/etc/passwd", "/etc/group", "/data", "/tmp"} {
		if files[want] == "" {
			t.Errorf("the image has no %s", want)
		}
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash", "/bin/busybox"} {
		if files[shell] != "" {
			t.Errorf("the image has a shell: %s", shell)
		}
	}
	if ca, err := os.ReadFile(files[caBundlePath]); err != nil || !strings.Contains(string(ca), "BEGIN CERTIFICATE") {
		t.Errorf("%s is not a PEM CA bundle (%v)", caBundlePath, err)
	}
	if passwd, err := os.ReadFile(files["/etc/passwd"]); err != nil || !strings.Contains(string(passwd), ":65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532 (%v)", err)
	}
	bin, err := elf.Open(files[binaryPath])
	if err != nil {
		t.Fatalf("%s: %v", binaryPath, err)
	}
	defer bin.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if bin.Machine != machine {
		t.Errorf("%s is built for %s, want %s (%s)", binaryPath, bin.Machine, machine, p.Architecture)
	}
	for _, prog := range bin.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked: the image has no libc (build with CGO_ENABLED=0)", binaryPath)
		}
	}
}

// checkOwners checks that user 65532 can write only /data (its volume) and /tmp, so the agent
// cannot change the binary or the CA bundle even where the root filesystem is writable.
func checkOwners(t *testing.T, headers map[string]*tar.Header) {
	t.Helper()
	for path, hdr := range headers {
		switch {
		case path == "/data":
			if hdr.Typeflag != tar.TypeDir || hdr.Uid != nonrootID || hdr.Mode&0o700 != 0o700 {
				t.Errorf("/data: want a directory owned and writable by 65532, got uid %d mode %o", hdr.Uid, hdr.Mode)
			}
		case path == "/tmp":
			if hdr.Typeflag != tar.TypeDir || hdr.Mode&0o1777 != 0o1777 {
				t.Errorf("/tmp: want a sticky world-writable directory, got mode %o", hdr.Mode)
			}
		case hdr.Uid != 0 || hdr.Gid != 0 || hdr.Mode&0o022 != 0:
			t.Errorf("%s: owned by %d:%d with mode %o, want root-owned and not writable by others", path, hdr.Uid, hdr.Gid, hdr.Mode)
		}
	}
}

// checkVersion runs the binary extracted from the image and checks the stamped version.
func checkVersion(t *testing.T, binary, version string) {
	t.Helper()
	out, err := exec.Command(binary, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("gitpeer version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "gitpeer "+version+" (") {
		t.Errorf("gitpeer version printed %q, want version %s", out, version)
	}
}

// checkTarball checks the platform's `docker load` tarball holds the same image: the tarball
// format has its own manifest, so the configurations (which name the layers by digest) are compared.
func checkTarball(t *testing.T, path string, want v1.Image) {
	t.Helper()
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	wantConfig, err := want.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if got != wantConfig {
		t.Errorf("%s holds the image with configuration %s, the layout %s", path, got, wantConfig)
	}
}

func jsonArray(t *testing.T, values []string) string {
	t.Helper()
	b, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), ",", ", ")
}
