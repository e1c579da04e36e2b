package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodesmith/nodesmith/pkg/fakeaws"
)

// worker is one running sqs-worker process and the events it printed.
type worker struct {
	cmd  *exec.Cmd
	done chan error

	mu     sync.Mutex
	events []map[string]any
	seen   chan string // event names as they are printed
}

func buildWorker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sqs-worker")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("building the worker: %v\n%s", err, out)
	}
	return bin
}

func startWorker(t *testing.T, bin, queueURL, endpoint string, processing time.Duration) *worker {
	t.Helper()
	cmd := exec.Command(bin, "--queue-url", queueURL, "--processing-time", processing.String(), "--wait-time", "1s")
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIDFAKE", "AWS_SECRET_ACCESS_KEY=secret", "AWS_EC2_METADATA_DISABLED=true")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd, done: make(chan error, 1), seen: make(chan string, 1000)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			w.mu.Lock()
			w.events = append(w.events, ev)
			w.mu.Unlock()
			w.seen <- fmt.Sprint(ev["event"])
		}
		w.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return w
}

// await waits for the named event.
func (w *worker) await(t *testing.T, event string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case e := <-w.seen:
			if e == event {
				return
			}
		case <-deadline:
			t.Fatalf("the worker did not print %q within %s", event, within)
		}
	}
}

// deleted are the message ids the worker deleted.
func (w *worker) deleted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, ev := range w.events {
		if ev["event"] == "deleted" {
			out = append(out, fmt.Sprint(ev["messageId"]))
		}
	}
	return out
}

// TestSIGTERMFinishesTheMessageInHand runs the worker against the simulated
// SQS, stops it with SIGTERM while it works on a message, and checks that
// the message is finished and deleted before the worker exits, that it
// takes no new message after the signal, and that no message is lost: a
// second worker processes the rest, and every message sent is deleted
// exactly once.
func TestSIGTERMFinishesTheMessageInHand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the worker binary")
	}
	world := fakeaws.NewWorld(fakeaws.Options{Seed: 1, MaxLongPoll: ptr(time.Second)})
	srv := fakeaws.NewServer(world)
	endpoint := srv.Start()
	t.Cleanup(srv.Close)
	world.CreateQueue("work", nil)
	queueURL := srv.QueueURL("work")
	// Check the queue through a second client, the real SDK one.
	client := sqs.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", "")},
		func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	const sent = 6
	for i := range sent {
		if _, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(fmt.Sprintf("job-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildWorker(t)
	const processing = 2 * time.Second

	first := startWorker(t, bin, queueURL, endpoint, processing)
	first.await(t, "deleted", 30*time.Second) // one message done: the worker is up
	first.await(t, "received", 10*time.Second)
	signalled := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-first.done:
		if err != nil {
			t.Fatalf("the worker exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not exit within 30s of SIGTERM")
	}
	took := time.Since(signalled)
	if n := len(first.deleted()); n != 2 {
		t.Fatalf("the first worker deleted %d messages, want 2: the one before the signal and the one in hand", n)
	}
	if took < processing/2 {
		t.Errorf("the worker exited %v after SIGTERM: it cannot have finished a %v message", took, processing)
	}
	var received int
	first.mu.Lock()
	for _, ev := range first.events {
		if ev["event"] == "received" {
			received++
		}
	}
	first.mu.Unlock()
	if received != 2 {
		t.Errorf("the first worker received %d messages, want 2 (none after SIGTERM)", received)
	}
	if vis, inflight := world.QueueDepth("work"); vis != sent-2 || inflight != 0 {
		t.Fatalf("after the first worker: %d visible, %d in flight; want %d visible, none in flight", vis, inflight, sent-2)
	}

	second := startWorker(t, bin, queueURL, endpoint, 10*time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for len(second.deleted()) < sent-2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	_ = second.cmd.Process.Signal(syscall.SIGTERM)
	<-second.done
	all := append(first.deleted(), second.deleted()...)
	unique := map[string]bool{}
	for _, id := range all {
		unique[id] = true
	}
	if len(all) != sent || len(unique) != sent {
		t.Fatalf("deleted %d messages (%d distinct), want each of the %d sent once: %v", len(all), len(unique), sent, all)
	}
	if vis, inflight := world.QueueDepth("work"); vis+inflight != 0 {
		t.Fatalf("queue holds %d + %d messages at the end", vis, inflight)
	}
}

// TestParse checks the flags and their environment variables.
func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config
		wantErr string
	}{
		{name: "env", env: map[string]string{"QUEUE_URL": "https://q", "PROCESSING_TIME": "3s", "AWS_ENDPOINT_URL": "http://x"},
			want: config{queueURL: "https://q", endpoint: "http://x", region: "us-east-1", processingTime: 3 * time.Second, waitTime: 20 * time.Second}},
		{name: "flags win", args: []string{"--queue-url=https://f", "--processing-time=1s", "--wait-time=0s"}, env: map[string]string{"QUEUE_URL": "https://e"},
			want: config{queueURL: "https://f", region: "us-east-1", processingTime: time.Second}},
		{name: "queue required", wantErr: "--queue-url"},
		{name: "wait time too long", args: []string{"--queue-url=q", "--wait-time=30s"}, wantErr: "--wait-time"},
		{name: "bad processing env", env: map[string]string{"PROCESSING_TIME": "slow"}, wantErr: "PROCESSING_TIME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parse = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestDeploymentGivesTheWorkTime checks the manifest against the worker:
// the grace period outlasts the processing time it configures.
func TestDeploymentGivesTheWorkTime(t *testing.T) {
	raw, err := os.ReadFile("deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, _ := strings.Cut(string(raw), "\n---\n")
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict([]byte(doc), &d); err != nil {
		t.Fatalf("deployment.yaml: %v", err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	cfg, err := parse(c.Args, func(k string) string {
		for _, e := range c.Env {
			if e.Name == k {
				return e.Value
			}
		}
		return ""
	})
	if err != nil {
		t.Fatalf("the manifest's worker settings: %v", err)
	}
	grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if grace <= cfg.processingTime+10*time.Second {
		t.Fatalf("terminationGracePeriodSeconds %v leaves no room after a %v message", grace, cfg.processingTime)
	}
}

func ptr[T any](v T) *T { return &v }
