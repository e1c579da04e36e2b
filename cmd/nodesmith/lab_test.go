package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nodesmith/nodesmith/pkg/labkit"
)

// TestLabUpWithoutTools: lab up with nothing built names every missing
// tool and how to build it, and starts nothing. (test/trial runs the lab.)
func TestLabUpWithoutTools(t *testing.T) {
	t.Setenv("NODESMITH_CACHE", t.TempDir())
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("NODESMITH_KWOK", "")
	t.Setenv("NODESMITH_HELM", "")
	dir := filepath.Join(t.TempDir(), "lab")
	_, _, err := execute("lab", "up", "--dir", dir)
	if err == nil {
		t.Fatal("lab up succeeded with no tools built")
	}
	for _, want := range []string{"the lab's tools are missing", "kube-apiserver not found", "kwok not found", "helm not found", "tools/build.sh k8s kwok helm"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lab up's error lacks %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("lab up without tools made its state folder (%v)", err)
	}
}

// TestLabDownWithNothingRunning: down says so and leaves no folder; with a
// stale pid file (a lab that died) it cleans up.
func TestLabDownWithNothingRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	out, _, err := execute("lab", "down", "--dir", dir)
	if err != nil || !strings.Contains(out, "No lab is running") {
		t.Errorf("lab down with no lab: %q, %v", out, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// A pid above the kernel's pid_max can never be a live process.
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	dead := pidMax + 1
	if err := os.WriteFile(filepath.Join(dir, labkit.PIDFile), []byte(strconv.Itoa(dead)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = execute("lab", "down", "--dir", dir)
	if err != nil || !strings.Contains(out, "The lab is down") {
		t.Errorf("lab down with a stale pid file: %q, %v", out, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("lab down left %s (%v)", dir, err)
	}
}
