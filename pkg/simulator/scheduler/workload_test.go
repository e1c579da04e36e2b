package scheduler

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
)

// A synthetic cluster for the determinism test and the benchmark: nodes of
// three sizes over four zones, and pods of mixed shapes and rules.

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"}

func genNodes(n int) []*corev1.Node {
	sizes := []struct{ cpu, mem string }{{"8", "32Gi"}, {"16", "64Gi"}, {"32", "128Gi"}}
	out := make([]*corev1.Node, n)
	for i := range out {
		sz := sizes[i%len(sizes)]
		out[i] = mkNode(fmt.Sprintf("node-%04d", i), zone(zones[i%len(zones)]),
			alloc("cpu", sz.cpu, "memory", sz.mem, "pods", "110"),
			nodeLabels("node.kubernetes.io/instance-type", "m5."+sz.cpu))
	}
	return out
}

// genPods returns n pending pods: 40% Deployment replicas (system default
// spreading), 20% bare pods, 15% with a DoNotSchedule zone spread, 10% with
// hostname anti-affinity, 10% preferring the zone of a database, 5% pinned
// to a zone by nodeSelector.
func genPods(n int, seed uint64) []*corev1.Pod {
	rng := rand.New(rand.NewPCG(seed, 42))
	cpus := []string{"100m", "250m", "500m", "1", "1500m"}
	mems := []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi"}
	out := make([]*corev1.Pod, n)
	for i := range out {
		name := fmt.Sprintf("pod-%05d", i)
		r := req("cpu", cpus[rng.IntN(len(cpus))], "memory", mems[rng.IntN(len(mems))])
		var opts []podOpt
		switch k := rng.IntN(100); {
		case k < 40:
			d := fmt.Sprintf("deploy-%02d", rng.IntN(20))
			opts = []podOpt{labelsOf("app", d, "pod-template-hash", "h"+d), ownedBy("ReplicaSet", d+"-h")}
		case k < 60:
			opts = nil
		case k < 75:
			d := fmt.Sprintf("spread-%d", rng.IntN(5))
			opts = []podOpt{labelsOf("app", d), spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, sel("app", d))}
		case k < 85:
			d := fmt.Sprintf("anti-%d", rng.IntN(10))
			opts = []podOpt{labelsOf("app", d), podAntiAffinity(corev1.LabelHostname, sel("app", d))}
		case k < 95:
			opts = []podOpt{labelsOf("app", "client"), preferredPodAffinity(50, corev1.LabelTopologyZone, sel("app", "db"))}
		default:
			opts = []podOpt{labelsOf("app", "pinned"), nodeSelector(corev1.LabelTopologyZone, zones[rng.IntN(len(zones))])}
		}
		out[i] = mkPod(name, append(opts, r)...)
	}
	return out
}

// dbPods are bound pods the preferred affinity points at.
func dbPods() []*corev1.Pod {
	return []*corev1.Pod{
		mkPod("db-0", labelsOf("app", "db"), on("node-0001"), req("cpu", "500m", "memory", "1Gi")),
		mkPod("db-1", labelsOf("app", "db"), on("node-0002"), req("cpu", "500m", "memory", "1Gi")),
	}
}

// bound is the pod as the simulator would upsert it after binding.
func bound(p *corev1.Pod, node string) *corev1.Pod {
	b := *p
	b.Spec.NodeName = node
	b.Status.Phase = corev1.PodRunning
	return &b
}

// runDirect schedules the pods in order, binding each that fits, and
// returns pod → node ("" when it did not fit).
func runDirect(s *Scheduler, pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		node, err := s.Schedule(p)
		if err != nil {
			continue
		}
		out[i] = node
		s.UpsertPod(bound(p, node))
	}
	return out
}
