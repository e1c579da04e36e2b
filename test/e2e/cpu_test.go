package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// The lab's processes share the machine's cores, so after the nodes are
// Ready a scale-up is paced by CPU: kube-apiserver, etcd, kube-scheduler,
// KWOK, the controller and the test process itself (its watchers, the
// simulated AWS and the instance→Node bridge). cpuSample reads how many
// CPU seconds each has used, so a step can print who spent what over its
// window; wall-clock phases alone cannot say whether a phase waited for a
// core or for another process.

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go builds the lab for.
const clockTicks = 100

// cpuSample is the CPU time (user + system) of the test process and every
// process it started, keyed by pid.
type cpuSample struct {
	at    time.Time
	procs map[int]procCPU
}

type procCPU struct {
	name string
	cpu  time.Duration
}

func takeCPUSample() cpuSample {
	s := cpuSample{at: time.Now(), procs: map[int]procCPU{}}
	self := os.Getpid()
	parent := map[int]int{}
	times := map[int]time.Duration{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, cpu, ok := readStat(pid)
		if !ok {
			continue
		}
		parent[pid], times[pid] = ppid, cpu
	}
	for pid, cpu := range times {
		if !descends(pid, self, parent) {
			continue
		}
		s.procs[pid] = procCPU{name: procName(pid, self), cpu: cpu}
	}
	return s
}

func descends(pid, root int, parent map[int]int) bool {
	for i := 0; i < 32 && pid > 1; i++ {
		if pid == root {
			return true
		}
		pid = parent[pid]
	}
	return false
}

// readStat returns a process's parent and its user + system CPU time.
func readStat(pid int) (ppid int, cpu time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis start at field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return ppid, time.Duration(utime+stime) * time.Second / clockTicks, true
}

func procName(pid, self int) string {
	if pid == self {
		return "test process (watchers, simulated AWS, bridge)"
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return strconv.Itoa(pid)
	}
	argv0, _, _ := bytes.Cut(b, []byte{0})
	return filepath.Base(string(argv0))
}

// cpuTable prints each process's CPU seconds between two samples, largest
// first, with the share of the machine's capacity over the window.
func cpuTable(before, after cpuSample, cores int) string {
	type row struct {
		name string
		cpu  time.Duration
	}
	var rows []row
	var total time.Duration
	for pid, a := range after.procs {
		d := a.cpu - before.procs[pid].cpu // a process started inside the window counts from zero
		if d <= 0 {
			continue
		}
		rows = append(rows, row{a.name, d})
		total += d
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].cpu > rows[j].cpu })
	window := after.at.Sub(before.at)
	var b strings.Builder
	fmt.Fprintf(&b, "| process | CPU s | share of the %d cores over %.1f s |\n|---|---:|---:|\n", cores, window.Seconds())
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.2f | %.0f %% |\n", r.name, r.cpu.Seconds(), 100*r.cpu.Seconds()/(window.Seconds()*float64(cores)))
	}
	fmt.Fprintf(&b, "| all | %.2f | %.0f %% |\n", total.Seconds(), 100*total.Seconds()/(window.Seconds()*float64(cores)))
	return b.String()
}

// startCPUProfile, when NODESMITH_LAB_CPUPROFILE names a directory,
// profiles the test process (test.pprof: to split its share between the
// watchers, the simulated AWS and the bridge) and kube-apiserver for
// seconds (apiserver.pprof, from its /debug/pprof), and keeps the
// apiserver's metrics before and after (requests by verb and resource,
// watch events by kind). The returned func stops the test's profile and
// takes the second metrics.
func startCPUProfile(seconds int) (stop func()) {
	dir := os.Getenv("NODESMITH_LAB_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}
	}
	raw := func(path, file string, seconds int) {
		b, err := kubeRaw(path, seconds)
		if err != nil {
			b = []byte(err.Error())
		}
		_ = os.WriteFile(filepath.Join(dir, file), b, 0o644)
	}
	raw("/metrics", "apiserver-metrics-before.txt", 0)
	go raw("/debug/pprof/profile", "apiserver.pprof", seconds)
	f, err := os.Create(filepath.Join(dir, "test.pprof"))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		raw("/metrics", "apiserver-metrics-after.txt", 0)
	}
}

// kubeRaw GETs a path of kube-apiserver as the lab's admin; seconds > 0
// is passed as the seconds parameter (a profile's length).
func kubeRaw(path string, seconds int) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(lab.Env.Config)
	if err != nil {
		return nil, err
	}
	req := cs.CoreV1().RESTClient().Get().AbsPath(path).Timeout(time.Duration(seconds+30) * time.Second)
	if seconds > 0 {
		req = req.Param("seconds", strconv.Itoa(seconds))
	}
	return req.DoRaw(ctx())
}
