package labkit

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nodesmith/nodesmith/test/testenv"
)

// CheckTools finds every binary the lab runs — kube-apiserver, etcd,
// kube-scheduler and kube-controller-manager, kwok, helm, and go when the
// controller is to be built — and names the missing ones with how to build
// them.
func CheckTools(needGo bool) error {
	var missing []string
	if dir, err := testenv.AssetsDir(); err != nil {
		missing = append(missing, err.Error())
	} else {
		for _, bin := range []string{"kube-scheduler", "kube-controller-manager"} {
			if _, err := exec.LookPath(filepath.Join(dir, bin)); err != nil {
				missing = append(missing, fmt.Sprintf("%s not found in %s", bin, dir))
			}
		}
	}
	if _, err := testenv.KwokPath(); err != nil {
		missing = append(missing, err.Error())
	}
	if _, err := testenv.HelmPath(); err != nil {
		missing = append(missing, err.Error())
	}
	if needGo {
		if _, err := exec.LookPath("go"); err != nil {
			missing = append(missing, "go not found on PATH (it builds cmd/controller; or pass a built controller)")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return errors.New("the lab's tools are missing:\n  - " + strings.Join(missing, "\n  - ") + `
Build them once from source in the Nodesmith checkout (through the Go module
proxy; the first build takes a while, later runs reuse ~/.cache/nodesmith):

  tools/build.sh k8s kwok helm

The lab finds them in that cache; KUBEBUILDER_ASSETS, NODESMITH_KWOK and
NODESMITH_HELM point it elsewhere.`)
}
