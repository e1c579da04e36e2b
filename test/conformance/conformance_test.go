package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// check is one line of botocore_suite.py's output.
type check struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

func TestBotocoreDrivesFakeAWS(t *testing.T) {
	python := requirePython(t)
	endpoint := startFakeAWS(t, buildFakeAWS(t))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "botocore_suite.py")
	cmd.Env = append(os.Environ(), "FAKE_AWS_ENDPOINT="+endpoint, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var checks []check
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c check
		if json.Unmarshal(sc.Bytes(), &c) != nil {
			t.Errorf("unparsable suite output line: %s", sc.Text())
			continue
		}
		checks = append(checks, c)
	}
	failed := 0
	for _, c := range checks {
		if !c.OK {
			failed++
			t.Errorf("botocore check failed: %s: %s", c.Check, c.Detail)
		}
	}
	if err != nil {
		t.Errorf("botocore_suite.py: %v\n%s", err, stderr.String())
	}
	if len(checks) == 0 {
		t.Fatalf("the suite reported no checks\nstderr:\n%s", stderr.String())
	}
	t.Logf("botocore %s: %d of %d checks pass", botocoreVersion(t, python), len(checks)-failed, len(checks))
}

// requirePython returns python3's path; the suite needs boto3 and botocore
// and fails, never skips, without them.
func requirePython(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("the botocore conformance suite needs python3 on PATH with boto3 and botocore installed (pip install boto3): %v", err)
	}
	if out, err := exec.Command(python, "-c", "import boto3, botocore").CombinedOutput(); err != nil {
		t.Fatalf("the botocore conformance suite needs boto3 and botocore for %s (pip install boto3): %v\n%s", python, err, out)
	}
	return python
}

func botocoreVersion(t *testing.T, python string) string {
	out, err := exec.Command(python, "-c", "import botocore; print(botocore.__version__)").Output()
	if err != nil {
		t.Errorf("botocore version: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// buildFakeAWS compiles cmd/fake-aws, the binary under test.
func buildFakeAWS(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "fake-aws")
	build := exec.Command(goBin, "build", "-o", bin, "./cmd/fake-aws")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/fake-aws: %v\n%s", err, out)
	}
	return bin
}

// startFakeAWS runs the binary on a free loopback port with instances that
// boot and stop at once, and returns the endpoint its banner prints.
func startFakeAWS(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--boot-delay", "0s", "--shutdown-delay", "0s",
		"--cluster-name", "conformance", "--roles", "conformance-nodes",
		// The reservations botocore_suite.py's reservation checks launch into.
		"--capacity-reservation", "type=m6i.large,zone=us-east-1a,count=2,id=cr-0c0ffee0000000001,match=targeted,interruptible=true,tag.team=ml",
		"--capacity-reservation", "type=c5.large,zone=us-east-1b,count=1,id=cr-0c0ffee0000000002,kind=capacity-block,end=2099-01-01T00:00:00Z")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting fake-aws: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if ep, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "export AWS_ENDPOINT_URL="); ok {
				found <- ep
			}
		}
	}()
	select {
	case ep := <-found:
		return ep
	case <-time.After(time.Minute):
		t.Fatalf("fake-aws printed no endpoint within a minute\nstderr:\n%s", stderr.String())
		return ""
	}
}
