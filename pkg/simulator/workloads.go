package simulator

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodesmith/nodesmith/pkg/simulator/keda"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// replicaSet plays the ReplicaSet controller: it keeps `desired` pods alive,
// replaces lost ones and, when scaled down, deletes the least established
// pods first (pending, then starting, then running; newest first within
// each), as the ReplicaSet controller ranks them.
type replicaSet struct {
	s       *Sim
	name    string
	tmpl    *corev1.PodTemplateSpec
	desired int32
	pods    []*pod
	serial  int
	queued  bool
	worker  *queueWorker
}

func (r *replicaSet) scale(n int32) {
	if n == r.desired {
		return
	}
	r.desired = n
	r.reconcileSoon()
}

// reconcileSoon coalesces the changes of one instant into one reconcile.
func (r *replicaSet) reconcileSoon() {
	if r.queued {
		return
	}
	r.queued = true
	r.s.schedule(r.s.now, prioNormal, r.reconcile)
}

func (r *replicaSet) reconcile() {
	r.queued = false
	live := r.pods[:0]
	for _, p := range r.pods {
		if p.state != podGone {
			live = append(live, p)
		}
	}
	clear(r.pods[len(live):])
	r.pods = live
	var active []*pod
	for _, p := range r.pods {
		if p.state != podTerminating {
			active = append(active, p)
		}
	}
	for n := len(active); n < int(r.desired); n++ {
		r.serial++
		p := r.s.newPod(fmt.Sprintf("%s-%05d", r.name, r.serial), r.tmpl, r, "ReplicaSet")
		r.pods = append(r.pods, p)
		r.s.addPod(p)
	}
	if extra := len(active) - int(r.desired); extra > 0 {
		slices.SortStableFunc(active, func(a, b *pod) int {
			if a.state != b.state {
				return int(a.state) - int(b.state)
			}
			return b.seq - a.seq
		})
		for _, p := range active[:extra] {
			r.s.terminate(p)
		}
	}
}

func (r *replicaSet) podRunning(p *pod) {
	if r.worker != nil {
		r.worker.work(p)
	}
}

func (r *replicaSet) podGone(p *pod) {
	if r.worker != nil {
		r.worker.lost(p)
	}
	r.reconcileSoon()
}

// startDeployment follows the scenario's replica schedule.
func (s *Sim) startDeployment(d scenario.Deployment) {
	rs := &replicaSet{s: s, name: d.Name, tmpl: &d.Template}
	s.replicaSets = append(s.replicaSets, rs)
	for _, step := range d.Replicas {
		n := step.Replicas
		s.schedule(step.At.Duration, prioNormal, func() { rs.scale(n) })
	}
}

// queueWorker is a Deployment scaled by the KEDA model whose running pods
// consume a queue: receive, process, delete, repeat; a pod that finds the
// queue empty waits in its long poll until a message becomes visible.
type queueWorker struct {
	s          *Sim
	rs         *replicaSet
	cfg        keda.Config
	state      keda.State
	queue      *simQueue
	processing time.Duration
	concurrent int
}

func (s *Sim) startQueueWorker(w scenario.QueueWorker) {
	qw := &queueWorker{s: s, cfg: w.KEDA(), queue: s.queues[w.Queue], processing: w.ProcessingTime.Duration, concurrent: w.Concurrency}
	qw.rs = &replicaSet{s: s, name: w.Name, tmpl: &w.Template, worker: qw}
	s.replicaSets = append(s.replicaSets, qw.rs)
	qw.state.Replicas = qw.cfg.MinReplicas
	qw.rs.scale(qw.cfg.MinReplicas)
	s.schedule(0, prioLate, qw.poll)
}

// poll is one KEDA polling cycle.
func (w *queueWorker) poll() {
	m, err := w.queue.metrics()
	if err != nil {
		w.s.fail(fmt.Errorf("keda polling queue %s: %w", w.queue.name, err))
		return
	}
	w.state = w.cfg.Poll(m, w.state, w.s.clock.Now())
	w.rs.scale(w.state.Replicas)
	w.s.schedule(w.s.now+w.cfg.PollingInterval, prioLate, w.poll)
}

// work takes messages until the pod is at its concurrency or the queue is empty.
func (w *queueWorker) work(p *pod) {
	for p.state == podRunning && p.busy < w.concurrent {
		receipt, ok, err := w.queue.receive()
		if err != nil {
			w.s.fail(fmt.Errorf("worker %s receiving: %w", p.obj.Name, err))
			return
		}
		if !ok {
			w.queue.wait(p)
			return
		}
		p.busy++
		p.held = append(p.held, w.s.now)
		receivedAt := w.s.now
		w.s.after(w.processing, func() { w.done(p, receipt, receivedAt) })
	}
}

func (w *queueWorker) done(p *pod, receipt string, receivedAt time.Duration) {
	if p.state == podGone {
		return // the message comes back when its visibility timeout ends
	}
	if err := w.queue.delete(receipt); err != nil {
		w.s.fail(fmt.Errorf("worker %s deleting a message: %w", p.obj.Name, err))
		return
	}
	p.busy--
	if i := slices.Index(p.held, receivedAt); i >= 0 {
		p.held = slices.Delete(p.held, i, i+1)
	}
	if p.state == podTerminating && p.busy == 0 {
		w.s.removePod(p)
		return
	}
	w.work(p)
}

// lost handles a pod that went away holding messages: they become visible
// again when their visibility timeout ends, and waiting workers are woken then.
func (w *queueWorker) lost(p *pod) {
	for _, at := range p.held {
		w.s.schedule(at+w.queue.visibility, prioNormal, w.queue.wake)
	}
	p.held = nil
	w.queue.forget(p)
}

// job runs Completions pods, Parallelism at a time, each for a fixed time once Running.
type job struct {
	s                     *Sim
	spec                  scenario.Job
	active, done, created int32
	serial                int
}

func (s *Sim) startJob(j scenario.Job) {
	jb := &job{s: s, spec: j}
	s.jobs = append(s.jobs, jb)
	s.schedule(j.At.Duration, prioNormal, jb.fill)
}

func (j *job) fill() {
	for j.active < j.spec.Parallelism && j.created < j.spec.Completions {
		j.created++
		j.active++
		j.serial++
		j.s.addPod(j.s.newPod(fmt.Sprintf("%s-%05d", j.spec.Name, j.serial), &j.spec.Template, j, "Job"))
	}
}

// wanted is how many of the job's pods should exist now.
func (j *job) wanted() int32 {
	if j.s.now < j.spec.At.Duration {
		return 0
	}
	return min(j.spec.Parallelism, j.spec.Completions-j.done)
}

func (j *job) podRunning(p *pod) {
	j.s.after(j.spec.Duration.Duration, func() {
		if p.state != podRunning {
			return
		}
		p.obj.Status.Phase = corev1.PodSucceeded
		j.done++
		j.s.removePod(p)
	})
}

func (j *job) podGone(p *pod) {
	j.active--
	if p.obj.Status.Phase != corev1.PodSucceeded {
		j.created-- // lost before it finished: the Job controller makes another
	}
	j.fill()
}
