package simulator

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	schedcorev1 "k8s.io/component-helpers/scheduling/corev1"

	"github.com/nodesmith/nodesmith/pkg/simulator/keda"
	"github.com/nodesmith/nodesmith/pkg/simulator/scenario"
)

// replicaSet plays the ReplicaSet controller: it keeps `desired` pods that
// are not being deleted, replaces lost ones once they are deleted and, when
// scaled down, deletes the least established pods first (unbound, then
// starting, then on a dead node, then running; newest first within each),
// as the ReplicaSet controller ranks them.
type replicaSet struct {
	s       *Sim
	name    string
	tmpl    *corev1.PodTemplateSpec
	desired int32
	pods    []*pod
	serial  int
	queued  bool
	worker  *queueWorker
	// shutdown is how long a pod takes to exit after SIGTERM.
	shutdown time.Duration
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

var deleteRank = map[podState]int{podPending: 0, podStarting: 1, podLost: 2, podRunning: 3}

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
		if !p.deleting {
			active = append(active, p)
		}
	}
	for n := len(active); n < int(r.desired); n++ {
		r.serial++
		p := r.s.createPod(fmt.Sprintf("%s-%05d", r.name, r.serial), r.tmpl, r, "ReplicaSet", r.name, "")
		if p == nil {
			return
		}
		r.pods = append(r.pods, p)
	}
	if extra := len(active) - int(r.desired); extra > 0 {
		slices.SortStableFunc(active, func(a, b *pod) int {
			if ra, rb := deleteRank[a.state], deleteRank[b.state]; ra != rb {
				return ra - rb
			}
			return b.seq - a.seq
		})
		for _, p := range active[:extra] {
			r.s.deletePod(p)
		}
	}
}

func (r *replicaSet) podRunning(p *pod) {
	if r.worker != nil {
		r.worker.work(p)
	}
}

func (r *replicaSet) podStopping(p *pod) {
	if r.worker != nil {
		r.worker.stopping(p)
		return
	}
	r.s.after(r.shutdown, func() { r.s.kubelets.exited(p) })
}

func (r *replicaSet) podLost(p *pod) {
	if r.worker != nil {
		r.worker.lost(p)
	}
}

func (r *replicaSet) podGone(p *pod) {
	if r.worker != nil {
		r.worker.lost(p)
	}
	r.reconcileSoon()
}

// deletePod deletes a pod through the API, as its controller would.
func (s *Sim) deletePod(p *pod) {
	obj := &corev1.Pod{}
	obj.Namespace, obj.Name = p.key.Namespace, p.key.Name
	if err := s.kube.Delete(s.ctx, obj); client.IgnoreNotFound(err) != nil {
		s.fail(fmt.Errorf("deleting pod %s: %w", p.key, err))
	}
}

// startDeployment follows the scenario's replica schedule.
func (s *Sim) startDeployment(d scenario.Deployment) {
	rs := &replicaSet{s: s, name: d.Name, tmpl: &d.Template, shutdown: d.ShutdownTime.Duration}
	s.rsets = append(s.rsets, rs)
	for _, step := range d.Replicas {
		n := step.Replicas
		s.schedule(step.At.Duration, prioNormal, func() { rs.scale(n) })
	}
}

// queueWorker is a Deployment scaled by the KEDA model whose running pods
// consume a queue: receive, process, delete, repeat; a pod that finds the
// queue empty waits in its long poll until a message becomes visible. On
// SIGTERM a worker stops receiving, finishes the messages in hand and exits.
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
	s.rsets = append(s.rsets, qw.rs)
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
			w.s.fail(fmt.Errorf("worker %s receiving: %w", p.key.Name, err))
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
	if p.state != podRunning && p.state != podTerminating {
		return // the process died: the message comes back when its visibility timeout ends
	}
	if err := w.queue.delete(receipt); err != nil {
		w.s.fail(fmt.Errorf("worker %s deleting a message: %w", p.key.Name, err))
		return
	}
	p.busy--
	if i := slices.Index(p.held, receivedAt); i >= 0 {
		p.held = slices.Delete(p.held, i, i+1)
	}
	if p.state == podTerminating {
		if p.busy == 0 {
			w.s.kubelets.exited(p)
		}
		return
	}
	w.work(p)
}

// stopping is SIGTERM: no new message; exit once the messages in hand are done.
func (w *queueWorker) stopping(p *pod) {
	w.queue.forget(p)
	if p.busy == 0 {
		w.s.kubelets.exited(p)
	}
}

// lost handles a worker that died holding messages: they become visible
// again when their visibility timeout ends, and waiting workers are woken then.
func (w *queueWorker) lost(p *pod) {
	for _, at := range p.held {
		w.s.schedule(at+w.queue.visibility, prioNormal, w.queue.wake)
	}
	p.held = nil
	p.busy = 0
	w.queue.forget(p)
}

// job runs Completions pods, Parallelism at a time, each for a fixed time once Running.
type job struct {
	s                     *Sim
	spec                  scenario.Job
	active, done, created int32
	serial                int
	// gang is the ProvisioningRequest a gang job waits for (nil for a
	// plain job).
	gang *gang
}

func (s *Sim) startJob(j scenario.Job) {
	jb := &job{s: s, spec: j}
	s.jobs = append(s.jobs, jb)
	if j.ProvisioningClassName != "" {
		jb.gang = &gang{job: jb}
		s.schedule(j.At.Duration, prioNormal, jb.gang.request)
		return
	}
	s.schedule(j.At.Duration, prioNormal, jb.fill)
}

func (j *job) fill() {
	if j.gang != nil && !j.gang.admitted {
		return
	}
	for j.active < j.spec.Parallelism && j.created < j.spec.Completions {
		j.created++
		j.active++
		j.serial++
		if p := j.s.createPod(fmt.Sprintf("%s-%05d", j.spec.Name, j.serial), j.template(), j, "Job", j.spec.Name, ""); p == nil {
			return
		}
	}
}

// wanted is how many of the job's pods should exist now.
func (j *job) wanted() int32 {
	if j.s.now < j.spec.At.Duration || j.gang != nil && !j.gang.admitted {
		return 0
	}
	return min(j.spec.Parallelism, j.spec.Completions-j.done)
}

func (j *job) podRunning(p *pod) {
	j.s.after(j.spec.Duration.Duration, func() {
		if p.state != podRunning {
			return
		}
		obj := j.s.getPod(p)
		if obj == nil {
			return
		}
		obj.Status.Phase = corev1.PodSucceeded
		if err := j.s.kube.Status().Update(j.s.ctx, obj); err != nil {
			j.s.fail(fmt.Errorf("completing pod %s: %w", p.key, err))
			return
		}
		j.done++
		p.succeeded = true
		// Finished pods are removed at once (ttlSecondsAfterFinished: 0).
		j.s.setState(p, podTerminating)
		j.s.kubelets.exited(p)
	})
}

func (j *job) podStopping(p *pod) { j.s.kubelets.exited(p) }
func (j *job) podLost(*pod)       {}

func (j *job) podGone(p *pod) {
	j.active--
	if !p.succeeded {
		j.created-- // lost before it finished: the Job controller makes another
	}
	j.fill()
}

// daemonSet plays the DaemonSet controller: one pod, bound directly, on
// every node whose taints its pods tolerate (with the tolerations the
// controller adds to every daemon pod) and whose labels its affinity
// matches.
type daemonSet struct {
	s        *Sim
	ds       *appsv1.DaemonSet
	probe    *corev1.Pod
	affinity nodeaffinity.RequiredNodeAffinity
	on       map[string]bool
}

// daemonTolerations are added to every DaemonSet pod by its controller.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

func newDaemonSet(s *Sim, ds *appsv1.DaemonSet) *daemonSet {
	probe := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	probe.Spec.Tolerations = append(probe.Spec.Tolerations, daemonTolerations...)
	return &daemonSet{s: s, ds: ds, probe: probe, affinity: nodeaffinity.GetRequiredNodeAffinity(probe), on: map[string]bool{}}
}

// nodeChanged creates the daemon pod on a node that now takes it.
func (d *daemonSet) nodeChanged(n *corev1.Node) {
	if d.on[n.Name] || !d.fits(n) {
		return
	}
	d.on[n.Name] = true
	name := n.Name
	d.s.schedule(d.s.now, prioNormal, func() {
		tmpl := &corev1.PodTemplateSpec{ObjectMeta: d.probe.ObjectMeta, Spec: d.probe.Spec}
		d.s.createPod(fmt.Sprintf("%s-%s", d.ds.Name, name), tmpl, d, "DaemonSet", d.ds.Name, name)
	})
}

func (d *daemonSet) fits(n *corev1.Node) bool {
	if _, untolerated := schedcorev1.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, d.probe.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false); untolerated {
		return false
	}
	ok, err := d.affinity.Match(n)
	return ok && err == nil
}

func (d *daemonSet) podRunning(*pod)    {}
func (d *daemonSet) podStopping(p *pod) { d.s.kubelets.exited(p) }
func (d *daemonSet) podLost(*pod)       {}

// podGone: a daemon pod deleted from a node that still takes it is made again.
func (d *daemonSet) podGone(p *pod) {
	delete(d.on, p.node)
	if n := d.s.nodeOf(p.node); n != nil && n.DeletionTimestamp == nil {
		d.nodeChanged(n)
	}
}
