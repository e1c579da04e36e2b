package testenv

import (
	"fmt"
	"sort"
)

// StopAPIServer stops kube-apiserver (SIGTERM, as a rolling control-plane
// upgrade does) and waits for it to exit; etcd and every process started
// through Env keep running, cut off from the API until StartAPIServer.
func (e *Env) StopAPIServer() error {
	if err := e.env.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	return nil
}

// StartAPIServer starts kube-apiserver again on the same port, with the same
// flags, certificates, client CA and etcd, and waits until it reports healthy.
func (e *Env) StartAPIServer() error {
	if err := e.env.ControlPlane.APIServer.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// Exited lists the processes started through Env that have exited, with
// their log tails, sorted by name.
func (e *Env) Exited() []string {
	e.mu.Lock()
	procs := append([]*Process(nil), e.procs...)
	e.mu.Unlock()
	var out []string
	for _, p := range procs {
		select {
		case <-p.done:
			out = append(out, fmt.Sprintf("%s (%v): %s", p.Name, p.err, p.LogTail(5)))
		default:
		}
	}
	sort.Strings(out)
	return out
}
