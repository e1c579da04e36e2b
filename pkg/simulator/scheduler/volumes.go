package scheduler

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// VolumeBinding's reasons, word for word.
const (
	reasonVolumeNodeConflict = "node(s) had volume node affinity conflict"
	reasonVolumeBindConflict = "node(s) didn't find available persistent volumes to bind"
)

// volumeStore is what the VolumeBinding plugin reads from its informers:
// claims by namespace/name, volumes and classes by name.
type volumeStore struct {
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

func (s *Scheduler) volumeStore() *volumeStore {
	if s.vols == nil {
		s.vols = &volumeStore{claims: map[string]*corev1.PersistentVolumeClaim{},
			volumes: map[string]*corev1.PersistentVolume{}, classes: map[string]*storagev1.StorageClass{}}
	}
	return s.vols
}

// UpsertClaim adds or replaces a PersistentVolumeClaim.
func (s *Scheduler) UpsertClaim(c *corev1.PersistentVolumeClaim) {
	s.volumeStore().claims[c.Namespace+"/"+c.Name] = c
}

// DeleteClaim forgets a PersistentVolumeClaim.
func (s *Scheduler) DeleteClaim(c *corev1.PersistentVolumeClaim) {
	delete(s.volumeStore().claims, c.Namespace+"/"+c.Name)
}

// UpsertVolume adds or replaces a PersistentVolume.
func (s *Scheduler) UpsertVolume(v *corev1.PersistentVolume) { s.volumeStore().volumes[v.Name] = v }

// DeleteVolume forgets a PersistentVolume.
func (s *Scheduler) DeleteVolume(v *corev1.PersistentVolume) { delete(s.volumeStore().volumes, v.Name) }

// UpsertStorageClass adds or replaces a StorageClass.
func (s *Scheduler) UpsertStorageClass(c *storagev1.StorageClass) {
	s.volumeStore().classes[c.Name] = c
}

// DeleteStorageClass forgets a StorageClass.
func (s *Scheduler) DeleteStorageClass(c *storagev1.StorageClass) {
	delete(s.volumeStore().classes, c.Name)
}

// volumeFilter is VolumeBinding's PreFilter state for one pod: the node
// affinity of the PersistentVolumes its bound claims use, and the allowed
// topologies of the WaitForFirstConsumer classes of its unbound ones.
type volumeFilter struct {
	bound   []nodeaffinity.RequiredNodeAffinity
	classes []*storagev1.StorageClass
}

// newVolumeFilter is VolumeBinding's PreFilter: nil and no message for a
// pod without claims; a message when the pod can be bound nowhere (a claim,
// its volume or its class missing, or an unbound claim of an Immediate
// class: the PV controller binds those, not the scheduler).
func (s *Scheduler) newVolumeFilter(p *corev1.Pod) (*volumeFilter, string) {
	var f *volumeFilter
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		var name string
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			name = p.Name + "-" + v.Name
		default:
			continue
		}
		vs := s.volumeStore()
		c := vs.claims[p.Namespace+"/"+name]
		if c == nil {
			return nil, fmt.Sprintf("persistentvolumeclaim %q not found", name)
		}
		if c.DeletionTimestamp != nil {
			return nil, fmt.Sprintf("persistentvolumeclaim %q is being deleted", name)
		}
		if f == nil {
			f = &volumeFilter{}
		}
		if c.Spec.VolumeName != "" {
			pv := vs.volumes[c.Spec.VolumeName]
			if pv == nil {
				return nil, "pvc(s) bound to non-existent pv(s)"
			}
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
				f.bound = append(f.bound, nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: corev1.PodSpec{
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: pv.Spec.NodeAffinity.Required}}}}))
			}
			continue
		}
		className := ""
		if c.Spec.StorageClassName != nil {
			className = *c.Spec.StorageClassName
		}
		sc := vs.classes[className]
		if sc == nil || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			return nil, "pod has unbound immediate PersistentVolumeClaims"
		}
		f.classes = append(f.classes, sc)
	}
	return f, ""
}

// filter is VolumeBinding's Filter on one node: every bound volume's node
// affinity must match it, and every unbound claim's class must be allowed
// to provision there. (No static binding of unbound claims to existing
// volumes, no capacity: the simulator has no volume provisioner.)
func (f *volumeFilter) filter(n *corev1.Node) string {
	for i := range f.bound {
		if ok, _ := f.bound[i].Match(n); !ok {
			return reasonVolumeNodeConflict
		}
	}
	for _, sc := range f.classes {
		if len(sc.AllowedTopologies) > 0 && !matchTopology(sc.AllowedTopologies, n.Labels) {
			return reasonVolumeBindConflict
		}
	}
	return ""
}

// matchTopology: some term's every expression has the node's value among
// its values.
func matchTopology(terms []corev1.TopologySelectorTerm, lbls map[string]string) bool {
	for _, t := range terms {
		ok := true
		for _, e := range t.MatchLabelExpressions {
			v, has := lbls[e.Key]
			found := false
			for _, want := range e.Values {
				found = found || (has && v == want)
			}
			ok = ok && found
		}
		if ok {
			return true
		}
	}
	return false
}
