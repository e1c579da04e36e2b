package labkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A lab run in the background (`nodesmith lab up`) keeps its state in one
// folder: the files below, written by the lab's own process.
const (
	// StateFile holds State as JSON once the lab is ready.
	StateFile = "state.json"
	// PIDFile holds the lab process's pid from its start.
	PIDFile = "pid"
	// KubeconfigFile is the cluster admin's kubeconfig.
	KubeconfigFile = "kubeconfig"
	// LogFile is the lab process's own output.
	LogFile = "lab.log"
)

// State describes a running background lab.
type State struct {
	// PID is the lab process; it leads a session of its own, and every
	// process of the lab (control plane, KWOK, controller) is in it.
	PID        int       `json:"pid"`
	Started    time.Time `json:"started"`
	Kubeconfig string    `json:"kubeconfig"`
	// LogDir holds the control plane's, KWOK's and the controller's logs.
	LogDir        string `json:"logDir"`
	ControllerLog string `json:"controllerLog"`
	AWSURL        string `json:"awsURL"`
	Cluster       string `json:"cluster"`
	Region        string `json:"region"`
}

// WriteState writes s into dir atomically.
func WriteState(dir string, s State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, StateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, StateFile))
}

// ReadState reads dir's state; an error wrapping os.ErrNotExist when the
// lab there is not (yet) ready.
func ReadState(dir string) (State, error) {
	var s State
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("reading %s: %w", filepath.Join(dir, StateFile), err)
	}
	return s, nil
}

// ReadPID is the pid in dir's pid file, and whether that process is alive;
// 0 when there is no pid file.
func ReadPID(dir string) (int, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, PIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false, fmt.Errorf("reading %s: %w", filepath.Join(dir, PIDFile), err)
	}
	return pid, Alive(pid), nil
}

// Alive reports whether pid is a running process (not a zombie).
func Alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := procStat(pid)
	return err == nil && st.state != "Z"
}

// SessionProcesses are the live processes of session sid (the lab's pid),
// from /proc.
func SessionProcesses(sid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := procStat(pid)
		if err != nil || st.session != sid || st.state == "Z" {
			continue
		}
		out = append(out, pid)
	}
	return out, nil
}

type stat struct {
	state   string
	session int
}

// procStat reads the state and session of /proc/<pid>/stat (fields 3 and
// 6; the command name in field 2 may hold spaces, so fields are counted
// from its closing parenthesis).
func procStat(pid int) (stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, err
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return stat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return stat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	sid, err := strconv.Atoi(f[3])
	if err != nil {
		return stat{}, err
	}
	return stat{state: f[0], session: sid}, nil
}
