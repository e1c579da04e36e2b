package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Versions of the binaries tools/build.sh builds; they name the cache folders.
const (
	K8sVersion  = "v1.37.2"
	EtcdVersion = "v3.7.0"
	HelmVersion = "v3.22.0"
	KwokVersion = "v0.8.0"
)

// CacheDir is where tools/build.sh keeps its binaries:
// ${NODESMITH_CACHE:-~/.cache/nodesmith}.
func CacheDir() (string, error) {
	if d := os.Getenv("NODESMITH_CACHE"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the tool cache: %w", err)
	}
	return filepath.Join(home, ".cache", "nodesmith"), nil
}

// AssetsDir is the folder holding kube-apiserver, etcd, kube-scheduler and
// kube-controller-manager: KUBEBUILDER_ASSETS when set, else the folder
// `tools/build.sh --path k8s` prints. It fails, naming the fix, when
// kube-apiserver or etcd is not there.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		cache, err := CacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "k8s-"+K8sVersion+"-etcd-"+EtcdVersion)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if err := executable(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s not found in %s (run make tools, or tools/build.sh k8s): %w", bin, dir, err)
		}
	}
	return dir, nil
}

// HelmPath is the helm binary: NODESMITH_HELM when set, else the one
// `tools/build.sh helm` builds.
func HelmPath() (string, error) { return toolPath("helm", "NODESMITH_HELM", HelmVersion) }

// KwokPath is the kwok binary: NODESMITH_KWOK when set, else the one
// `tools/build.sh kwok` builds.
func KwokPath() (string, error) { return toolPath("kwok", "NODESMITH_KWOK", KwokVersion) }

// toolPath is the binary name: the path in the environment variable env
// when set, else <cache>/<name>-<version>/<name>; an error says how to
// build it when it is not there.
func toolPath(name, env, version string) (string, error) {
	path := os.Getenv(env)
	if path == "" {
		cache, err := CacheDir()
		if err != nil {
			return "", err
		}
		path = filepath.Join(cache, name+"-"+version, name)
	}
	if err := executable(path); err != nil {
		return "", fmt.Errorf("%s not found at %s (run make tools, or tools/build.sh %s): %w", name, path, name, err)
	}
	return path, nil
}

// module is go.mod's first line in a Nodesmith checkout.
const module = "module github.com/nodesmith/nodesmith"

// RepoRoot is the root of the Nodesmith checkout, found from this file's
// location so tests work from any package directory. A binary built with
// -trimpath has no such location; it then looks up from the working
// directory for the checkout's go.mod (`nodesmith lab` run from a clone).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if isCheckout(root) {
		return root
	}
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			if isCheckout(dir) {
				return dir
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return root
}

func isCheckout(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && strings.HasPrefix(string(b), module+"\n")
}

// CRDDir holds the generated CRDs (make generate writes them).
func CRDDir() string { return filepath.Join(RepoRoot(), "charts", "nodesmith", "crds") }

func executable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}
